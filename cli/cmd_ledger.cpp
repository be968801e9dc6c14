// `moesim ledger SCENARIO [--set K=V]... [--json FILE|-]` and `moesim inventory SCENARIO`.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/listing.hpp"
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
};

void add_scenario_args(CLI::App* sub, ScenarioArgs& a) {
  sub->add_option("scenario", a.scenario, "scenario JSON file")->required();
  sub->add_option("--set", a.sets,
                  "override a scenario field: PATH=VALUE (repeatable), e.g. architecture.moe.num_experts=64");
  sub->add_option("--json", a.json_out, "also write the result as JSON to FILE ('-' for standard output)");
}
}  // namespace

Runner add_ledger_command(CLI::App& app) {
  auto args = std::make_shared<ScenarioArgs>();
  auto* sub = app.add_subcommand("ledger", "per-rank memory ledger and OOM verdict of a scenario");
  add_scenario_args(sub, *args);
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}});
    const Scenario s = load_scenario(args->scenario, args->sets);
    const Inventory inv = build_inventory(s.arch);
    const FlopsPerToken flops = flop_conventions().get(s.flop_convention).per_token(s.arch, inv);
    const MemoryLedger ledger = scenario_ledger(s, inv);
    const LedgerInputs in{s, inv, flops, ledger};
    listing << ledger_table(in);
    if (!args->json_out.empty()) write_output(args->json_out, json_text(ledger_json(in)));
    return 0;
  };
}

Runner add_inventory_command(CLI::App& app) {
  auto args = std::make_shared<ScenarioArgs>();
  auto* sub = app.add_subcommand("inventory", "every parameter tensor of the scenario's architecture");
  add_scenario_args(sub, *args);
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}});
    const Scenario s = load_scenario(args->scenario, args->sets);
    const Inventory inv = build_inventory(s.arch);
    listing << inventory_table(inv);
    if (!args->json_out.empty()) write_output(args->json_out, json_text(inventory_json(inv)));
    return 0;
  };
}

}  // namespace moesim::cli
