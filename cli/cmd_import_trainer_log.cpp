// `moesim import trainer-log LOG... --format F --scenario S [--set PATH=VALUE...] [--skip N] -o RUNS`:
// the throughput lines of Olmo-core, torchtitan or Megatron-LM logs -> a moesim-runs/1 file for
// `moesim fit runs` (calibrate/README.md), one run per log, named after the log. The file is
// written only when every log was read and the document reads back as runs (its scenario composes).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/fit/trainer_logs.hpp"
#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/input/overrides.hpp"
#include "reports/output_file.hpp"
#include "studies/measured_runs.hpp"

namespace moesim::cli {

namespace {

namespace fs = std::filesystem;

struct TrainerLogArgs {
  std::vector<std::string> logs, sets;
  std::string format, scenario, output;
  int skip = 2;
};

nlohmann::json measured_block(const fit::TrainerLogSummary& s) {
  nlohmann::json m = nlohmann::json::object();
  if (s.step_time_ms) m["step_time_ms"] = *s.step_time_ms;
  if (s.tokens_per_s_per_gpu) m["tokens_per_s_per_gpu"] = *s.tokens_per_s_per_gpu;
  if (s.mfu) {
    m["mfu"] = *s.mfu;
    m["flop_convention"] = s.flop_convention;
  }
  if (s.peak_allocated_GiB) m["peak_allocated_GiB"] = *s.peak_allocated_GiB;
  if (s.peak_reserved_GiB) m["peak_reserved_GiB"] = *s.peak_reserved_GiB;
  return m;
}

int run_import_trainer_log(const TrainerLogArgs& a) {
  const fs::path out_dir = is_standard_output(a.output) ? fs::current_path() : fs::absolute(a.output).parent_path();
  nlohmann::json set = nlohmann::json::object();
  for (const auto& text : a.sets) {
    const Override o = parse_override(text, "--set");
    set[o.dotted] = o.value;
  }
  nlohmann::json doc = {{"schema", "moesim-runs/1"},
                        {"name", fs::path(a.logs.front()).stem().string()},
                        {"description", "imported by moesim import trainer-log --format " + a.format},
                        {"runs", nlohmann::json::array()}};
  // Relative to the runs file, as a runs file names its scenarios; an absolute one stays absolute.
  const std::string scenario =
      fs::path(a.scenario).is_absolute() ? a.scenario : fs::absolute(a.scenario).lexically_relative(out_dir).string();
  std::ostream& out = listing_stream({{"--output", &a.output}});
  for (const auto& log : a.logs) {
    const fit::TrainerLogSummary s = fit::read_trainer_log(log, a.format, a.skip);
    nlohmann::json run = {{"id", fs::path(log).stem().string()},
                          {"scenario", scenario},
                          {"measured", measured_block(s)},
                          {"source", s.source}};
    if (!set.empty()) run["set"] = set;
    doc["runs"].push_back(run);
    out << log << ": " << s.steps_used << " of " << s.steps_logged << " logged steps (" << s.first_step << "-"
        << s.last_step << "): " << measured_block(s).dump() << "\n";
  }
  // What is written must read back as runs, its scenario composing (the file is named by its folder).
  parse_runs(doc, (out_dir / "imported-runs.json").string(), {});
  write_output(a.output, json_text(doc));
  if (!is_standard_output(a.output)) out << "moesim import: wrote " << a.output << "\n";
  return 0;
}

}  // namespace

Runner add_import_trainer_log_command(CLI::App& import) {
  auto args = std::make_shared<TrainerLogArgs>();
  auto* sub = import.add_subcommand("trainer-log",
                                    "trainer throughput logs (Olmo-core, torchtitan, Megatron-LM) "
                                    "-> a moesim-runs/1 file for moesim fit runs");
  sub->add_option("logs", args->logs, "trainer log files, one run each (named after the file)")->required();
  sub->add_option("--format", args->format, "which trainer printed the logs")
      ->required()
      ->check(CLI::IsMember(fit::trainer_log_formats()));
  sub->add_option("--scenario", args->scenario, "the scenario the logged runs ran (model, plan, hardware)")->required();
  sub->add_option("--set", args->sets, "override a field of the scenario for every run, e.g. design=fsdp");
  sub->add_option("--skip", args->skip, "logged steps skipped as warm-up before the median (2)")
      ->check(non_negative_number());
  sub->add_option("-o,--output", args->output, "moesim-runs/1 file to write ('-': stdout)")
      ->check(output_path())
      ->required();
  return [=]() -> int {
    if (!sub->parsed()) return -1;
    return run_import_trainer_log(*args);
  };
}

}  // namespace moesim::cli
