// `moesim bench SCENARIO [--set K=V]... [--repeat N]`: how long one simulation takes (DAG build,
// replay, metrics and ledger; input parsing excluded), the number the README reports. With
// `--plan-gpus N [--search AXIS=V,...]... [-j J]`: how long a whole `moesim plan` search takes
// and how many candidates it gets through per second (scenario parsing excluded).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"
#include "studies/plan_search.hpp"

namespace moesim::cli {

namespace {

int bench_plan_search(const std::string& file, const std::vector<std::string>& sets, const PlanRequest& request,
                      int jobs, int repeat) {
  const ScenarioSource source = plan_source(read_scenario(file, sets), request);
  const PlanSpace space = plan_space(source, compose(source), request);
  PlanSearchOptions options;
  options.jobs = jobs;
  std::vector<double> seconds;
  PlanCounts n;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    n = search_plans(source, space, options).counts;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf(
      "%s: plan search on %lld GPUs, %d thread(s): %zu candidates (%zu refused by rule, %zu pruned by memory, %zu "
      "pruned by bound, %zu replayed); median %.2f s (min %.2f, max %.2f, %d runs): %.0f candidates/s\n",
      compose(source).name.c_str(), static_cast<long long>(request.gpus), jobs, n.enumerated, n.refused_by_rule,
      n.pruned_by_memory, n.pruned_by_bound, n.replayed, median, seconds.front(), seconds.back(), repeat,
      static_cast<double>(n.enumerated) / median);
  return 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  struct Args {
    std::string scenario;
    std::vector<std::string> sets;
    int repeat = 20;
    PlanRequest plan;
    int jobs = 1;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("bench", "time the simulation of one scenario (milliseconds per simulated step)");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--set", args->sets, "override a scenario field: PATH=VALUE (repeatable)");
  add_profile_option(sub, args->sets);
  sub->add_option("--repeat", args->repeat, "simulations (or plan searches) to time")->check(CLI::Range(1, 100000));
  auto* plan_gpus =
      sub->add_option("--plan-gpus", args->plan.gpus, "time a plan search for this many GPUs instead of one simulation")
          ->check(CLI::Range(1, 1000000));
  // Both only shape a plan search: without --plan-gpus they would be ignored.
  sub->add_option("--search", args->plan.search, "plan search: restrict an axis or add one, as `moesim plan --search`")
      ->needs(plan_gpus);
  sub->add_option("-j,--jobs", args->jobs, "plan search: threads (default 1)")
      ->check(CLI::Range(1, 4096))
      ->needs(plan_gpus);
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    if (args->plan.gpus > 0)
      return bench_plan_search(args->scenario, args->sets, args->plan, args->jobs,
                               sub->count("--repeat") > 0 ? args->repeat : 1);
    const Scenario s = load_scenario(args->scenario, args->sets);
    std::vector<double> ms;
    std::size_t tasks = 0, ranks = 0;
    Simulation sim;  // reused, as a sweep thread reuses its own: the steady state is timed
    for (int i = 0; i < args->repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      simulate(s, SimOptions{}, sim);
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
