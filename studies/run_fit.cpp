#include "studies/run_fit.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <type_traits>

#include "models/common/suggest.hpp"
#include "models/input/sweep_spec.hpp"
#include "studies/bounded_least_squares.hpp"

namespace moesim {

namespace {

using RunSet = std::vector<const MeasuredRun*>;

// The number at `path` (a fittable field's value path) in the run's composed scenario.
double base_value(const MeasuredRun& run, const FittableField& field) {
  const Scenario s = compose(run.scenario);
  std::string pointer;  // "/hardware/a/b/value" from "hardware.a.b.value"
  for (const char c : value_path(field)) pointer.push_back(c == '.' ? '/' : c);
  pointer.insert(pointer.begin(), '/');
  const nlohmann::json::json_pointer at(pointer);
  if (!s.resolved.contains(at) || !s.resolved.at(at).is_number())
    throw InputError("--free", field.name, "the base profile " + s.hardware.name + " has no such number to fit");
  return s.resolved.at(at).get<double>();
}

std::vector<ScenarioChange> changes_at(const std::vector<const FittableField*>& fields, const std::vector<double>& x) {
  std::vector<ScenarioChange> out;
  for (std::size_t k = 0; k < fields.size(); ++k) {
    out.push_back({parse_override(override_text(value_path(*fields[k]), x[k]), "moesim fit runs"), "moesim fit runs"});
  }
  return out;
}

// Relative errors of every metric of every run at `x`.
std::vector<double> relative_errors(const RunSet& runs, const std::vector<const FittableField*>& fields,
                                    const std::vector<double>& x) {
  const auto changes = changes_at(fields, x);
  std::vector<double> out;
  for (const MeasuredRun* run : runs) {
    const std::vector<double> predicted = predict_run(*run, changes);
    for (std::size_t m = 0; m < predicted.size(); ++m)
      out.push_back((predicted[m] - run->metrics[m].measured) / run->metrics[m].measured);
  }
  return out;
}

std::vector<FittedParameter> solve(const RunSet& runs, const std::vector<const FittableField*>& fields,
                                   const std::vector<double>& base, int& evaluations) {
  std::vector<BoundedParameter> bounded;
  for (std::size_t k = 0; k < fields.size(); ++k)
    bounded.push_back({fields[k]->name, fields[k]->lower, fields[k]->upper, base[k]});
  const BoundedFit fit =
      fit_bounded([&](const std::vector<double>& x) { return relative_errors(runs, fields, x); }, bounded);
  evaluations += fit.evaluations;
  std::vector<FittedParameter> out;
  for (std::size_t k = 0; k < fields.size(); ++k) {
    out.push_back(
        {fields[k], base[k], fit.values[k], fit.determined[k], fit.at_bound[k], fit.sensitivity[k], fit.why_flat[k]});
  }
  return out;
}

std::vector<MetricPrediction> predictions_for(const MeasuredRun& run, const std::vector<FittedParameter>& params) {
  const std::vector<double> base = predict_run(run, parameter_changes(params, true));
  const std::vector<double> fitted = predict_run(run, parameter_changes(params, false));
  std::vector<MetricPrediction> out;
  for (std::size_t m = 0; m < run.metrics.size(); ++m)
    out.push_back({run.id, run.metrics[m].name, run.metrics[m].measured, base[m], fitted[m]});
  return out;
}

RunSet all_of(const RunsFile& file) {
  RunSet out;
  for (const auto& r : file.runs) out.push_back(&r);
  return out;
}

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The set's values in order, joined as every other list in an error or warning is.
template <typename T>
std::string listed(const std::set<T>& values) {
  std::vector<std::string> words;
  for (const auto& v : values) {
    if constexpr (std::is_same_v<T, std::string>) {
      words.push_back(v);
    } else {
      words.push_back(std::to_string(v));
    }
  }
  return comma_joined(words);
}

}  // namespace

std::vector<ScenarioChange> parameter_changes(const std::vector<FittedParameter>& parameters, bool base) {
  std::vector<const FittableField*> fields;
  std::vector<double> x;
  for (const auto& p : parameters) {
    fields.push_back(p.field);
    x.push_back(base ? p.base : p.fitted);
  }
  return changes_at(fields, x);
}

std::vector<MetricErrors> metric_errors(const std::vector<MetricPrediction>& predictions) {
  std::vector<MetricErrors> out;
  for (const auto& p : predictions) {
    auto it = std::find_if(out.begin(), out.end(), [&](const MetricErrors& e) { return e.metric == p.metric; });
    if (it == out.end()) it = out.insert(out.end(), MetricErrors{p.metric, 0, 0, 0, 0, 0});
    ++it->count;
    it->mean_abs += std::fabs(p.error());
    it->max_abs = std::max(it->max_abs, std::fabs(p.error()));
    it->base_mean_abs += std::fabs(p.base_error());
    it->base_max_abs = std::max(it->base_max_abs, std::fabs(p.base_error()));
  }
  for (auto& e : out) {
    e.mean_abs /= static_cast<double>(e.count);
    e.base_mean_abs /= static_cast<double>(e.count);
  }
  return out;
}

std::vector<std::string> extrapolation(const MeasuredRun& target, const std::vector<const MeasuredRun*>& fitted) {
  std::set<std::string> designs;
  for (const MeasuredRun* r : fitted) designs.insert(r->design);
  std::vector<std::string> why;
  if (!designs.count(target.design)) why.push_back("design " + target.design + " is not among " + listed(designs));
  // Counts: outside the span of the fitted runs' values.
  const std::pair<std::int64_t MeasuredRun::*, const char*> counts[] = {{&MeasuredRun::gpus, "GPUs"},
                                                                        {&MeasuredRun::experts, "routed experts"},
                                                                        {&MeasuredRun::microbatches, "microbatches"}};
  for (const auto& [field, what] : counts) {
    std::set<std::int64_t> seen;
    for (const MeasuredRun* r : fitted) seen.insert(r->*field);
    const std::int64_t v = target.*field;
    if (!seen.empty() && (v < *seen.begin() || v > *seen.rbegin()))
      why.push_back(std::to_string(v) + " " + what + " is outside the fitted " + listed(seen));
  }
  std::vector<std::string> out;
  for (const auto& w : why) out.push_back("run " + target.id + " lies outside the fitted runs: " + w);
  return out;
}

RunFitResult fit_runs(const RunsFile& runs, const std::vector<std::string>& free) {
  std::vector<const FittableField*> fields;
  for (const auto& name : free) {
    const FittableField* f = &fittable_field(name, "--free");
    if (std::find(fields.begin(), fields.end(), f) != fields.end())
      throw InputError("--free", name, "named twice; each free field once");
    fields.push_back(f);
  }
  if (fields.empty()) throw InputError("--free", "", "no free field given; fittable: see moesim fit runs --help");
  if (fields.size() > runs.runs.size()) {
    throw InputError(runs.file, "runs",
                     std::to_string(runs.runs.size()) + " run(s) cannot determine " + std::to_string(fields.size()) +
                         " free fields: free at most as many fields as there are runs");
  }
  std::vector<double> base;
  for (const auto* f : fields) base.push_back(base_value(runs.runs.front(), *f));
  RunFitResult result;
  const RunSet everyone = all_of(runs);
  result.parameters = solve(everyone, fields, base, result.evaluations);
  double sum = 0;
  for (const auto& run : runs.runs) {
    for (const auto& p : predictions_for(run, result.parameters)) {
      result.residuals.push_back(p);
      sum += p.error() * p.error();
      result.max_rel = std::max(result.max_rel, std::fabs(p.error()));
    }
  }
  result.points = static_cast<int>(result.residuals.size());
  result.rms_rel = std::sqrt(sum / result.points);
  result.errors = metric_errors(result.residuals);
  for (const auto& p : result.parameters) {
    if (!p.determined)
      result.warnings.push_back(p.field->name + " is not determined by these runs (" + p.why_flat +
                                "); kept at its base value");
    if (p.at_bound)
      result.warnings.push_back(p.field->name + " ended at a bound of its physical range (" + number(p.field->lower) +
                                " to " + number(p.field->upper) + " " + p.field->unit +
                                "): the runs ask for more than the field can physically absorb");
  }
  result.loo.possible = runs.runs.size() >= 2;
  if (!result.loo.possible) return result;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    RunSet others;
    for (std::size_t k = 0; k < runs.runs.size(); ++k) {
      if (k != i) others.push_back(&runs.runs[k]);
    }
    const auto params = solve(others, fields, base, result.evaluations);
    const auto p = predictions_for(runs.runs[i], params);
    result.loo.predictions.insert(result.loo.predictions.end(), p.begin(), p.end());
    const auto w = extrapolation(runs.runs[i], others);
    result.loo.warnings.insert(result.loo.warnings.end(), w.begin(), w.end());
  }
  result.loo.errors = metric_errors(result.loo.predictions);
  return result;
}

RunPredictions predict_runs(const RunsFile& targets, const RunsFile& fitted_on,
                            const std::vector<FittedParameter>& parameters) {
  RunPredictions out;
  const RunSet fitted = all_of(fitted_on);
  for (const auto& run : targets.runs) {
    const auto p = predictions_for(run, parameters);
    out.predictions.insert(out.predictions.end(), p.begin(), p.end());
    const auto w = extrapolation(run, fitted);
    out.warnings.insert(out.warnings.end(), w.begin(), w.end());
  }
  out.errors = metric_errors(out.predictions);
  return out;
}

}  // namespace moesim
