#include "reports/run_fit_report.hpp"

#include <cmath>

#include "reports/text_format.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

std::string percent(double fraction) { return fmt("%+.1f%%", 100 * fraction); }

std::string number_text(double v) { return std::fabs(v) >= 1000 ? fmt("%.0f", v) : fmt("%.4g", v); }

}  // namespace

std::string metric_value_text(const std::string& metric, double value) {
  if (metric == "mfu") return fmt("%.1f%%", 100 * value);
  if (metric == "tokens_per_s_per_gpu") return fmt("%.0f", value);
  if (metric == "peak_allocated_GiB" || metric == "peak_reserved_GiB") return fmt("%.1f GiB", value);
  return fmt("%.1f ms", 1e3 * value);  // step_time_s and phase.<phase>_s
}

std::string fit_parameter_table(const RunFitResult& fit) {
  TextTable t({{"free field"},
               {"base", Align::right},
               {"fitted", Align::right},
               {"range", Align::right},
               {"at bound"},
               {"determined"},
               {"effect over range", Align::right}});
  for (const auto& p : fit.parameters) {
    std::string range = number_text(p.field->lower);  // "[lower, upper] unit"
    range.insert(range.begin(), '[');
    range += ", " + number_text(p.field->upper) + "] " + p.field->unit;
    t.add({p.field->name, number_text(p.base), p.determined ? number_text(p.fitted) : "-", range,
           p.at_bound ? "yes" : "no", p.determined ? "yes" : "no (kept at base)", percent(p.sensitivity)});
  }
  return t.render();
}

std::string prediction_table(const std::vector<MetricPrediction>& predictions, const std::string& base_label,
                             const std::string& fitted_label) {
  TextTable t({{"run"},
               {"metric"},
               {"measured", Align::right},
               {base_label, Align::right},
               {"error", Align::right},
               {fitted_label, Align::right},
               {"error", Align::right}});
  for (const auto& p : predictions) {
    t.add({p.run, p.metric, metric_value_text(p.metric, p.measured), metric_value_text(p.metric, p.base),
           percent(p.base_error()), metric_value_text(p.metric, p.predicted), percent(p.error())});
  }
  return t.render();
}

std::string error_summary(const std::vector<MetricErrors>& errors, const std::string& base_label,
                          const std::string& fitted_label) {
  TextTable t({{"metric"},
               {"runs", Align::right},
               {base_label + " mean |error|", Align::right},
               {"max", Align::right},
               {fitted_label + " mean |error|", Align::right},
               {"max", Align::right}});
  for (const auto& e : errors) {
    t.add({e.metric, std::to_string(e.count), fmt("%.1f%%", 100 * e.base_mean_abs), fmt("%.1f%%", 100 * e.base_max_abs),
           fmt("%.1f%%", 100 * e.mean_abs), fmt("%.1f%%", 100 * e.max_abs)});
  }
  return t.render();
}

std::string run_fit_listing(const RunFitResult& fit, const std::string& runs_file) {
  std::string out = "fit to " + runs_file + ": " + std::to_string(fit.points) + " measured metrics, " +
                    std::to_string(fit.evaluations) + " replays of the run set\n\n";
  out += fit_parameter_table(fit) + "\n";
  out += "residuals (errors are predicted / measured - 1)\n" + prediction_table(fit.residuals, "base", "fitted");
  out += fmt("fitted residual rms %.2f%%", 100 * fit.rms_rel) + fmt(", max %.2f%%", 100 * fit.max_rel) + " over " +
         std::to_string(fit.points) + " points\n\n";
  out += "leave-one-out cross-validation: each run predicted by a fit to the others\n";
  if (!fit.loo.possible) return out + "  not possible with one run: its prediction is untested\n";
  out += prediction_table(fit.loo.predictions, "base", "left out") + "\n";
  out += error_summary(fit.loo.errors, "base", "left-out fit");
  return out;
}

namespace {

nlohmann::json predictions_json(const std::vector<MetricPrediction>& predictions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : predictions) {
    out.push_back({{"run", p.run},
                   {"metric", p.metric},
                   {"measured", p.measured},
                   {"base", p.base},
                   {"predicted", p.predicted},
                   {"base_error", p.base_error()},
                   {"error", p.error()}});
  }
  return out;
}

nlohmann::json errors_json(const std::vector<MetricErrors>& errors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : errors) {
    out.push_back({{"metric", e.metric},
                   {"runs", e.count},
                   {"mean_abs_error", e.mean_abs},
                   {"max_abs_error", e.max_abs},
                   {"base_mean_abs_error", e.base_mean_abs},
                   {"base_max_abs_error", e.base_max_abs}});
  }
  return out;
}

}  // namespace

nlohmann::json run_fit_json(const RunFitResult& fit, const std::string& runs_file, const std::string& base_profile,
                            const std::vector<std::pair<std::string, RunPredictions>>& predicted,
                            const std::vector<std::string>& warnings) {
  nlohmann::json parameters = nlohmann::json::array();
  for (const auto& p : fit.parameters) {
    parameters.push_back({{"field", p.field->name},
                          {"unit", p.field->unit},
                          {"lower", p.field->lower},
                          {"upper", p.field->upper},
                          {"base", p.base},
                          {"fitted", p.fitted},
                          {"determined", p.determined},
                          {"at_bound", p.at_bound},
                          {"effect_over_range", p.sensitivity},
                          {"why_not_determined", p.why_flat}});
  }
  nlohmann::json others = nlohmann::json::array();
  for (const auto& [file, p] : predicted)
    others.push_back(
        {{"file", file}, {"predictions", predictions_json(p.predictions)}, {"errors", errors_json(p.errors)}});
  return {{"schema", "moesim-fit-runs/1"},
          {"runs_file", runs_file},
          {"base_profile", base_profile},
          {"parameters", parameters},
          {"residuals", predictions_json(fit.residuals)},
          {"errors", errors_json(fit.errors)},
          {"rms_rel", fit.rms_rel},
          {"max_rel", fit.max_rel},
          {"points", fit.points},
          {"replays", fit.evaluations},
          {"leave_one_out",
           {{"possible", fit.loo.possible},
            {"predictions", predictions_json(fit.loo.predictions)},
            {"errors", errors_json(fit.loo.errors)}}},
          {"predicted", others},
          {"warnings", warnings}};
}

}  // namespace moesim
