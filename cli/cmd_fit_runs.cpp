// `moesim fit runs RUNS --base PROFILE --free FIELD... -o PROFILE [--predict RUNS...]`: run-level
// calibration (calibrate/README.md "Calibrating from your own runs"). Prints the fit, every run's
// residuals and the leave-one-out cross-validation, predicts other runs when asked, and writes the
// base profile with each determined field replaced by a "fitted to runs" quantity, atomically and
// only when every input is good.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/fit/fitted_fields.hpp"
#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/common/json_file.hpp"
#include "reports/output_file.hpp"
#include "reports/run_fit_report.hpp"
#include "studies/run_fit.hpp"

namespace moesim::cli {

namespace {

struct FitRunsArgs {
  std::string runs_file, base, output, json_out;
  std::vector<std::string> free, predict;
};

// The profile path of a fittable field ("hardware.compute.kernel_launch_us" -> compute, kernel_launch_us).
std::vector<std::string> profile_path(const FittableField& field) {
  std::vector<std::string> out;
  std::string rest = field.name.substr(std::string("hardware.").size());
  for (std::size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1))
    out.push_back(rest.substr(0, dot));
  out.push_back(rest);
  return out;
}

std::string run_ids(const RunsFile& runs) {
  std::string ids;
  for (const auto& r : runs.runs) ids += (ids.empty() ? "" : ", ") + r.id;
  return ids;
}

std::string provenance(const nlohmann::ordered_json& profile, const FittedParameter& p, const RunsFile& runs,
                       const RunFitResult& fit, const std::vector<std::string>& free) {
  std::string fields;
  for (const auto& f : free) fields += (fields.empty() ? "" : ", ") + f;
  const nlohmann::ordered_json* base = &profile;
  for (const auto& key : profile_path(*p.field)) base = &base->at(key);
  std::string loo;
  for (const auto& e : fit.loo.errors)
    loo += (loo.empty() ? "" : ", ") + e.metric + " mean " + fit::sig4(100 * e.mean_abs) + "% max " +
           fit::sig4(100 * e.max_abs) + "%";
  return "fitted to runs: " + runs.file + " (runs " + run_ids(runs) + "; free: " + fields + ") by moesim fit runs; " +
         fit::residual_text(fit.rms_rel, fit.max_rel, fit.points) + " (relative, every measured metric)" +
         (loo.empty() ? "" : "; leave-one-out |error|: " + loo) + "; base value " + fit::sig4(p.base) + " (" +
         base->value("kind", std::string("?")) + ")";
}

int run_fit_runs(const FitRunsArgs& a) {
  const std::string base = std::filesystem::absolute(resolve_profile(a.base)).lexically_normal().string();
  const std::vector<std::string> sets = {"hardware=" + nlohmann::json(base).dump()};
  const RunsFile runs = read_runs(a.runs_file, sets);
  std::vector<RunsFile> targets;
  for (const auto& file : a.predict) targets.push_back(read_runs(file, sets));
  nlohmann::ordered_json profile = read_ordered_json_file(base);
  const RunFitResult fit = fit_runs(runs, a.free);
  std::ostream& out = listing_stream({{"--output", &a.output}, {"--json", &a.json_out}});
  out << run_fit_listing(fit, runs.file);
  std::vector<std::string> warnings = fit.warnings;
  warnings.insert(warnings.end(), fit.loo.warnings.begin(), fit.loo.warnings.end());
  std::vector<std::pair<std::string, RunPredictions>> predicted;
  for (const auto& target : targets) {
    const RunPredictions& p = predicted.emplace_back(target.file, predict_runs(target, runs, fit.parameters)).second;
    out << "\npredicted " << target.file << " with the fit to " << runs.file << "\n"
        << prediction_table(p.predictions, "base", "fitted") << "\n"
        << error_summary(p.errors, "base", "fitted");
    warnings.insert(warnings.end(), p.warnings.begin(), p.warnings.end());
  }
  std::vector<fit::FieldUpdate> updates;
  for (const auto& p : fit.parameters) {
    if (!p.determined) continue;
    updates.push_back({profile_path(*p.field),
                       fit::fitted_quantity(p.fitted, provenance(profile, p, runs, fit, a.free)), fit::sig4(p.fitted)});
  }
  const auto print_warnings = [&] {
    out << std::flush;  // the warnings follow the tables, also when both reach one terminal
    for (const auto& w : warnings) std::cerr << "moesim fit runs: warning: " << w << "\n";
  };
  if (updates.empty()) {
    print_warnings();
    throw InputError(
        runs.file, "runs",
        "no free field is determined by these runs (see the table above); nothing fitted, nothing written");
  }
  fit::apply_updates(profile, updates, runs.file + " (measured runs " + run_ids(runs) + ")", base);
  write_output(a.output, json_text(profile));
  if (!a.json_out.empty()) write_output(a.json_out, json_text(run_fit_json(fit, runs.file, base, predicted, warnings)));
  if (!is_standard_output(a.output))
    out << "\nmoesim fit runs: " << updates.size() << " fields fitted; wrote " << a.output << "\n";
  print_warnings();
  return 0;
}

}  // namespace

Runner add_fit_runs_command(CLI::App& fit) {
  auto args = std::make_shared<FitRunsArgs>();
  auto* sub =
      fit.add_subcommand("runs", "fit fittable profile fields to measured runs of your own trainer (moesim-runs/1)");
  sub->add_option("runs", args->runs_file, "moesim-runs/1 file: scenarios and what was measured on them")->required();
  sub->add_option("--base", args->base, kProfileOptionHelp)->required();
  sub->add_option("--free", args->free,
                  "profile fields to fit, e.g. hardware.host.step_overhead_us (at most one per run; the fittable "
                  "fields: calibrate/README.md)")
      ->required();
  sub->add_option("-o,--output", args->output, "fitted profile to write ('-': stdout)")
      ->check(output_path())
      ->required();
  sub->add_option("--json", args->json_out, "also write the fit as a moesim-fit-runs/1 report ('-': stdout)")
      ->check(output_path());
  sub->add_option("--predict", args->predict,
                  "other moesim-runs/1 files to predict with the base and the fitted values");
  return [=]() -> int {
    if (!sub->parsed()) return -1;
    return run_fit_runs(*args);
  };
}

}  // namespace moesim::cli
