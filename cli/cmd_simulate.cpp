// `moesim simulate SCENARIO [--set K=V]... [--json FILE|-] [--trace FILE [--trace-ranks LIST]] [--all-ranks]
// [--fail-on-oom]`.
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

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

namespace {

// A trace this large (bytes) is said on stderr before it is written. chrome://tracing loads JSON
// traces up to 256 MB (google/trace-viewer issue 627, as google/perfetto issue 99 reports, where a
// 900 MB JSON trace crashed ui.perfetto.dev); Perfetto's docs (visualization/large-traces) give a
// browser about 2 GB at run time, a trace taking 2-4x its size there, and trace_processor --httpd
// for larger ones. A 512-GPU --all-ranks step writes about 1 GB.
constexpr std::size_t kLargeTraceBytes = 256u << 20;

// "0,3,8-11": simulated rank ranges, read before the step is simulated (a typo fails at once).
using RankRanges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
constexpr const char* kRanksAllowed = "simulated rank indices as a list with ranges, e.g. 0,3,8-11";

RankRanges parse_rank_ranges(const std::string& text) {
  RankRanges out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const auto number = [&](const std::string& s) {
      constexpr std::size_t kMaxDigits = 9;  // below 2^32
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > kMaxDigits)
        throw InputError("--trace-ranks", text, "'" + item + "' is not a rank or a range; allowed: " + kRanksAllowed);
      return static_cast<std::uint32_t>(std::stoul(s));
    };
    const std::uint32_t lo = number(item.substr(0, dash));
    const std::uint32_t hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) throw InputError("--trace-ranks", text, "range " + item + " runs backwards");
    out.emplace_back(lo, hi);
    at = comma + 1;
  }
  return out;
}

// The ranks of `ranges`, each one the step simulated.
std::vector<std::uint32_t> trace_ranks(const RankRanges& ranges, const std::string& text, std::uint32_t count) {
  std::vector<std::uint32_t> out;
  for (const auto& [lo, hi] : ranges) {
    if (hi >= count) {
      throw InputError("--trace-ranks", text,
                       "rank " + std::to_string(hi) + " is not simulated: the step simulates " + std::to_string(count) +
                           " rank(s), 0.." + std::to_string(count - 1) + " (--all-ranks simulates every one)");
    }
    for (std::uint32_t r = lo; r <= hi; ++r) out.push_back(r);
  }
  return out;
}

}  // namespace

Runner add_simulate_command(CLI::App& app) {
  struct Args {
    std::string scenario, json_out, trace_out, trace_ranks;
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
  sub->add_option("--trace-ranks", args->trace_ranks,
                  "only these simulated ranks in the trace, as the trace numbers them: 0,3,8-11 (with --trace)")
      ->needs("--trace");
  sub->add_flag("--all-ranks", args->all_ranks, "simulate every rank instead of one per distinct role");
  add_fail_on_oom(sub, args->fail_on_oom);
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}, {"--trace", &args->trace_out}});
    const RankRanges ranges = args->trace_ranks.empty() ? RankRanges{} : parse_rank_ranges(args->trace_ranks);
    const Scenario s = load_scenario(args->scenario, args->sets);
    SimOptions options;
    options.all_ranks = args->all_ranks;
    const Simulation sim = simulate(s, options);
    listing << step_table(s, sim.result);
    if (!args->trace_out.empty()) {
      const auto ranks = trace_ranks(ranges, args->trace_ranks, sim.step.graph.ranks());
      const std::size_t events = trace_event_count(sim, ranks);
      if (events * kTraceBytesPerEvent > kLargeTraceBytes) {
        std::cerr
            << "moesim: the trace holds " << events << " events, about " << (events * kTraceBytesPerEvent >> 20)
            << " MiB (" << sim.step.graph.ranks()
            << " simulated ranks); a browser may not open it (Perfetto: trace_processor --httpd): --trace-ranks picks "
               "ranks\n";
      }
      const std::string trace = trace_json(sim, ranks);
      write_output(args->trace_out, trace);
    }
    if (!args->json_out.empty()) write_output(args->json_out, json_text(step_json(s, sim.result)));
    return exit_code(args->fail_on_oom, sim.result.ledger.oom);
  };
}

}  // namespace moesim::cli
