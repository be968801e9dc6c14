// `moesim simulate SCENARIO [--set K=V]... [--json FILE|-] [--trace FILE] [--all-ranks] [--fail-on-oom]`.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/input/scenario.hpp"
#include "reports/output_file.hpp"
#include "reports/step_report.hpp"
#include "reports/trace_writer.hpp"
#include "sim/step_simulation.hpp"

namespace moesim::cli {

Runner add_simulate_command(CLI::App& app) {
  struct Args {
    std::string scenario, json_out, trace_out;
    std::vector<std::string> sets;
    bool all_ranks = false, fail_on_oom = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub =
      app.add_subcommand("simulate", "replay one training step: step time, tokens/s/GPU, MFU, exposed phases, memory");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--set", args->sets, "override a scenario field: PATH=VALUE (repeatable)");
  add_profile_option(sub, args->sets);
  sub->add_option("--json", args->json_out, "write the result as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--trace", args->trace_out, "write a Chrome/Perfetto trace of the step to FILE")
      ->check(output_path());
  sub->add_flag("--all-ranks", args->all_ranks, "simulate every rank instead of one per distinct role");
  add_fail_on_oom(sub, args->fail_on_oom);
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}, {"--trace", &args->trace_out}});
    const Scenario s = load_scenario(args->scenario, args->sets);
    SimOptions options;
    options.all_ranks = args->all_ranks;
    const Simulation sim = simulate(s, options);
    listing << step_table(s, sim.result);
    if (!args->trace_out.empty()) write_output(args->trace_out, trace_json(sim));
    if (!args->json_out.empty()) write_output(args->json_out, json_text(step_json(s, sim.result)));
    return exit_code(args->fail_on_oom, sim.result.ledger.oom);
  };
}

}  // namespace moesim::cli
