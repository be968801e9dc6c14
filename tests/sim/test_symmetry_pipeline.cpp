// The symmetry reduction gives the same step as simulating every rank; pipeline schedules
// produce bubbles and in-flight activations from the replay.
#include <catch2/catch.hpp>

#include "models/plan/design_spec.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("Symmetric replay equals the all-ranks replay", "[unit]") {
  for (const char* routing : {"uniform", "random", "zipf"}) {
    Scenario s = test::fig8("ddp-ep8", 32);
    s.plan.nodes = 2;
    s.plan.global_batch_tokens = 2 * 16 * 16384;
    s.plan.routing.kind = std::string(routing) == "uniform"  ? RoutingKind::uniform
                          : std::string(routing) == "random" ? RoutingKind::random
                                                             : RoutingKind::zipf;
    const Simulation sym = simulate(s, SimOptions{false});
    const Simulation all = simulate(s, SimOptions{true});
    INFO(routing);
    CHECK(all.result.simulated_ranks == 16);
    CHECK(sym.result.simulated_ranks == (std::string(routing) == "uniform" ? 1u : 8u));
    CHECK(sym.result.step_time_s == Approx(all.result.step_time_s).epsilon(1e-12));
  }
}

TEST_CASE("Skewed routing slows the step: the most-loaded rank sets the pace", "[unit]") {
  Scenario s = test::fig8("ddp-ep8", 64);
  const double even = simulate(s, SimOptions{}).result.step_time_s;
  s.plan.routing.kind = RoutingKind::zipf;
  s.plan.routing.zipf_exponent = 1.0;
  const double skewed = simulate(s, SimOptions{}).result.step_time_s;
  CHECK(skewed > even * 1.2);
  s.plan.routing.dropless = false;
  s.plan.routing.capacity_factor = 1.25;
  const StepResult capped = simulate(s, SimOptions{}).result;
  CHECK(capped.dropped_fraction > 0);
  CHECK(capped.step_time_s < skewed);
}

TEST_CASE("1F1B and interleaved schedules: order, bubble and measured in-flight microbatches", "[unit]") {
  ParallelPlan p;
  p.pp = 4;
  const auto ops = stage_schedule(p, 0, 8);
  REQUIRE(ops.size() == 16);
  CHECK(ops[0].forward);
  CHECK(ops[3].forward);   // 3 warm-up forwards, then the first 1F1B pair
  CHECK(!ops[4].forward);  // backward of microbatch 0
  CHECK(ops[4].microbatch == 0);
  p.pp_schedule = PipelineSchedule::interleaved_1f1b;
  p.pp_virtual = 2;
  const auto inter = stage_schedule(p, 0, 8);
  REQUIRE(inter.size() == 32);
  CHECK(inter[4].chunk == 1);  // after P = 4 microbatches through chunk 0 comes chunk 1
  CHECK(inter[4].microbatch == 0);

  Scenario s = test::fig8("ddp-ep8", 32);
  s.plan.nodes = 4;
  s.plan.pp = 4;
  s.plan.global_batch_tokens = 8 * 8 * 16384;  // m = 8
  const StepResult one = simulate(s, SimOptions{}).result;
  REQUIRE(one.in_flight.size() == 4);
  CHECK(one.in_flight[0] == std::vector<std::int64_t>{4});  // P - s microbatches in flight on stage s
  CHECK(one.in_flight[3] == std::vector<std::int64_t>{1});
  CHECK(one.idle_s > 0);  // the pipeline bubble comes out of the replay
  CHECK(one.ledger.stages[0].in_flight_microbatches == 4);
  s.plan.pp_schedule = PipelineSchedule::interleaved_1f1b;
  s.plan.pp_virtual = 2;
  const StepResult two = simulate(s, SimOptions{}).result;
  CHECK(two.idle_s < one.idle_s);  // interleaving shrinks the bubble
}

TEST_CASE("In-flight microbatches per stage from the pass order of 1F1B and interleaved 1F1B", "[unit]") {
  ParallelPlan p;
  p.pp = 4;
  auto on = [&](std::int64_t stage, std::int64_t m) {
    return schedule_in_flight(p, m).chunks[static_cast<std::size_t>(stage)];
  };
  using Mix = std::vector<std::int64_t>;
  CHECK(on(0, 16) == Mix{4});  // P - s warm-up forwards before the first backward, then one more
  CHECK(on(3, 16) == Mix{1});
  CHECK(on(0, 2) == Mix{2});  // fewer microbatches than stages: all of them
  p.pp_schedule = PipelineSchedule::interleaved_1f1b;
  p.pp_virtual = 2;
  // 2(P-1) + (v-1)P + 1 = 11 chunk-forwards: microbatches 0-3 through chunk 0, the same four
  // through chunk 1, then 4-6 through chunk 0 -> 7 passes of chunk 0 and 4 of chunk 1.
  CHECK(peak_chunks_in_flight(stage_schedule(p, 0, 16)) == 11);
  CHECK(on(0, 16) == Mix{7, 4});
  // Last stage: (v-1)P + 1 = 5: four through chunk 0, then the first through chunk 1.
  CHECK(on(3, 16) == Mix{4, 1});
  p.pp = 1;
  p.pp_schedule = PipelineSchedule::one_f_one_b;
  p.pp_virtual = 1;
  CHECK(on(0, 16) == Mix{1});
}

TEST_CASE("moesim ledger and moesim simulate agree: the schedule's in-flight counts are the replay's", "[unit]") {
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"plan.nodes=2", "design=ddp+ep8+pp2"},
      {"plan.nodes=4", "design=ddp+ep8+pp4+v2"},
      {"plan.nodes=4", "design=ddp+ep8+pp4", "plan.batch.global_batch_tokens=262144"},
      {"plan.nodes=2", "design=fsdp+pp2"},
      {"plan.nodes=4", "design=fsdp+pp4+v2"},
      {"design=fsdp", "plan.fsdp.prefetch_depth=2"},
      {"plan.nodes=4", "plan.routing.model=random", "design=ddp+ep8+pp2+v2"},
      {"plan.activations.recompute=full", "plan.nodes=2", "design=ddp+ep8+pp2"},
      // The V-shape and zero-bubble schedules (a W pass frees what its forward saved).
      {"plan.nodes=4", "design=ddp+ep8+pp4+1f1b_v"},
      {"plan.nodes=4", "design=ddp+ep8+pp4+zb_h1"},
      {"plan.nodes=4", "design=ddp+ep8+pp4+zbv"},
      {"plan.nodes=4", "design=ddp+ep8+pp4+1f1b_v", "plan.batch.global_batch_tokens=262144"},  // m = 2 < 2P - 1
      {"plan.nodes=2", "design=fsdp+pp2+zb_h1"},
      {"plan.nodes=2", "design=fsdp+pp2+1f1b_v"},
      {"plan.nodes=4", "plan.routing.model=random", "design=ddp+ep8+pp4+zbv"},
      {"plan.activations.recompute=full", "plan.nodes=2", "design=ddp+ep8+pp2+zb_h1"},
  };
  for (const auto& sets : variants) {
    const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets);
    const StepResult r = simulate(s).result;
    const MemoryLedger ledger = scenario_ledger(s, build_inventory(s.arch));
    INFO(design_name(s.plan) << " m=" << r.microbatches);
    REQUIRE(ledger.stages.size() == r.ledger.stages.size());
    for (std::size_t i = 0; i < ledger.stages.size(); ++i) {
      CHECK(ledger.stages[i].in_flight_chunks == r.in_flight[i]);
      CHECK(ledger.stages[i].peak_allocated == r.ledger.stages[i].peak_allocated);
    }
  }
}
