// `moesim ledger SCENARIO [--set K=V]... [--json FILE|-]` and `moesim inventory SCENARIO`.
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/arch/flops.hpp"
#include "models/arch/inventory.hpp"
#include "models/input/scenario.hpp"
#include "models/memory/ledger.hpp"
#include "reports/ledger_report.hpp"
#include "reports/output_file.hpp"
#include "sim/step_simulation.hpp"

namespace moesim::cli {

namespace {
struct ScenarioArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string json_out;
  bool fail_on_oom = false;
};

void add_scenario_args(CLI::App* sub, ScenarioArgs& a) {
  sub->add_option("scenario", a.scenario, "scenario JSON file")->required();
  sub->add_option("--set", a.sets,
                  "override a scenario field: PATH=VALUE (repeatable), e.g. architecture.moe.num_experts=64");
  add_profile_option(sub, a.sets);
  sub->add_option("--json", a.json_out, "also write the result as JSON to FILE ('-' for standard output)")
      ->check(output_path());
}
}  // namespace

// A command that reads a scenario and prints one report of it (text, and JSON with --json).
struct Report {
  std::string text;
  nlohmann::json json;
  std::optional<bool> oom;  // the memory verdict, for reports that give one (`--fail-on-oom`)
};
using ScenarioReport = std::function<Report(const Scenario&, const Inventory&)>;

Runner add_scenario_report(CLI::App& app, const char* name, const char* help, bool with_verdict,
                           ScenarioReport render) {
  auto args = std::make_shared<ScenarioArgs>();
  auto* sub = app.add_subcommand(name, help);
  add_scenario_args(sub, *args);
  if (with_verdict) add_fail_on_oom(sub, args->fail_on_oom);
  return [sub, args, render]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}});
    const Scenario s = load_scenario(args->scenario, args->sets);
    const Report report = render(s, build_inventory(s.arch));
    listing << report.text;
    if (!args->json_out.empty()) write_output(args->json_out, json_text(report.json));
    return exit_code(args->fail_on_oom, report.oom.value_or(false));
  };
}

Runner add_ledger_command(CLI::App& app) {
  return add_scenario_report(app, "ledger", "per-rank memory ledger and OOM verdict of a scenario", true,
                             [](const Scenario& s, const Inventory& inv) {
                               const FlopsPerToken flops =
                                   flop_conventions().get(s.flop_convention).per_token(s.arch, inv);
                               const MemoryLedger ledger = scenario_ledger(s, inv);
                               const LedgerInputs in{s, inv, flops, ledger};
                               return Report{ledger_table(in), ledger_json(in), ledger.oom};
                             });
}

Runner add_inventory_command(CLI::App& app) {
  return add_scenario_report(app, "inventory", "every parameter tensor of the scenario's architecture", false,
                             [](const Scenario&, const Inventory& inv) {
                               return Report{inventory_table(inv), inventory_json(inv), std::nullopt};
                             });
}

}  // namespace moesim::cli
