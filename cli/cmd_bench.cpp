// `moesim bench SCENARIO [--set K=V]... [--repeat N]`: how long one simulation takes (DAG build,
// replay, metrics and ledger; input parsing excluded), the number the README reports.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"

namespace moesim::cli {

Runner add_bench_command(CLI::App& app) {
  struct Args {
    std::string scenario;
    std::vector<std::string> sets;
    int repeat = 20;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("bench", "time the simulation of one scenario (milliseconds per simulated step)");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--set", args->sets, "override a scenario field: PATH=VALUE (repeatable)");
  add_profile_option(sub, args->sets);
  sub->add_option("--repeat", args->repeat, "simulations to time")->check(CLI::Range(1, 100000));
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    const Scenario s = load_scenario(args->scenario, args->sets);
    std::vector<double> ms;
    std::size_t tasks = 0, ranks = 0;
    for (int i = 0; i < args->repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const Simulation sim = simulate(s, SimOptions{});
      const auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      tasks = sim.result.tasks;
      ranks = sim.result.simulated_ranks;
    }
    std::sort(ms.begin(), ms.end());
    std::printf(
        "%s: %zu tasks on %zu simulated rank(s); per simulation: median %.3f ms, min %.3f ms, max %.3f ms (%d runs)\n",
        s.name.c_str(), tasks, ranks, ms[ms.size() / 2], ms.front(), ms.back(), args->repeat);
    return 0;
  };
}

}  // namespace moesim::cli
