// `moesim validate [DATASET...] [--json FILE|-]`: predicted vs published for every record;
// exit 1 when a record without a documented gap is outside its tolerance.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/common/bundled_data.hpp"
#include "reports/output_file.hpp"
#include "reports/validation_report.hpp"
#include "studies/validation.hpp"

namespace moesim::cli {

namespace {
// A dataset or scenario named relative to the checkout (the defaults are) is found from any
// folder: the current one first, then where the bundled data is (models/common/bundled_data.hpp),
// and when it is nowhere the error lists the folders looked in and how to point at them.
std::string located(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || std::filesystem::path(path).is_absolute()) return path;
  return require_bundled(path);
}
}  // namespace

Runner add_validate_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> datasets, sets;
    std::string json_out, sensitivity_scenario = "scenarios/fig8/fig8b.json";
    double sensitivity = 0;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("validate", "simulate validation datasets and compare with published measurements");
  sub->add_option("datasets", args->datasets,
                  "dataset files (default: scenarios/validation/seed.json, a100.json and h100.json)");
  sub->add_option("--json", args->json_out, "write the report as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--set", args->sets,
                  "override a field in every record's scenario (sensitivity studies), e.g. "
                  "hardware.interference.compute_slowdown_with_comm.value=0.3");
  auto* sensitivity_option =
      sub->add_option(
             "--sensitivity", args->sensitivity,
             "instead of one report, scale every assumed number of the hardware profile by 1 -+ FRACTION and print a "
             "table")
          ->check(fraction_up_to(0.9));  // 0 scales nothing: it printed the plain report instead
  sub->add_option("--sensitivity-scenario", args->sensitivity_scenario,
                  "scenario whose hardware profile lists the assumptions")
      ->needs(sensitivity_option);  // without it the scenario would be ignored
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}});
    std::vector<std::string> datasets = args->datasets;
    // --sensitivity scales the sensitivity scenario's profile numbers in every record: by default
    // only the seed dataset, whose records run on that profile (the A100 records run on another).
    if (datasets.empty() && args->sensitivity > 0) datasets = {default_validation_datasets().front()};
    if (datasets.empty()) datasets = default_validation_datasets();
    for (auto& file : datasets) file = located(file);
    if (args->sensitivity > 0) {
      const std::string scenario = located(args->sensitivity_scenario);
      for (const auto& file : datasets)
        std::cout << "\ndataset " << file << "\n\n"
                  << sensitivity_table(sensitivity(file, scenario, args->sensitivity), args->sensitivity);
      return 0;
    }
    nlohmann::json all = nlohmann::json::array();
    std::size_t failures = 0;
    for (const auto& file : datasets) {
      const ValidationReport report = validate_dataset(file, args->sets);
      listing << validation_table(report);
      all.push_back(validation_json(report));
      failures += report.failures();
    }
    if (!args->json_out.empty()) write_output(args->json_out, json_text(all.size() == 1 ? all.front() : all));
    return failures == 0 ? 0 : 1;
  };
}

}  // namespace moesim::cli
