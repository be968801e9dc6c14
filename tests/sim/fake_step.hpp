// One step built and replayed against a FakeCosts book (tests/sim/fake_costs.hpp): its graph,
// its replay and the replay's per-phase measures, for goldens worked out by hand.
#pragma once

#include "models/arch/inventory.hpp"
#include "models/input/composed_scenario.hpp"
#include "sim/engine.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_costs.hpp"

namespace moesim::test {

struct FakeStep {
  BuiltStep step;
  ReplayResult replay;
  TimelineMetrics metrics;
  // Rank 0's exposed time in a phase.
  double exposed(PhaseTag p) const { return metrics.ranks[0].exposed[static_cast<std::size_t>(p)]; }
};

inline FakeStep run_fake_step(const Scenario& s, const FakeCosts& costs) {
  FakeStep out;
  out.step = build_step(s.arch, build_inventory(s.arch), s.plan, costs, SimOptions{});
  out.replay = replay(out.step.graph, *fair_share(0));
  out.metrics = measure(out.step.graph, out.replay);
  return out;
}

}  // namespace moesim::test
