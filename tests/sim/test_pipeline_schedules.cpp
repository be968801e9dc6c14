// Pipeline schedules on a unit-time pipeline worked out by hand (1F1B, interleaved 1F1B, 1F1B-V,
// ZB-H1, ZB-V), their plan checks, and the in-flight counts `moesim ledger` and `moesim simulate`
// must agree on.
#include <catch2/catch.hpp>

#include "models/plan/design_spec.hpp"
#include "sim/engine.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/step_builder.hpp"
#include "sim/step_simulation.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/sim/unit_pipeline.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Contains;

namespace {

using Mix = std::vector<std::int64_t>;
using Mixes = std::vector<Mix>;

nlohmann::json unit_pipeline(const std::string& schedule, std::int64_t virtual_stages) {
  return test::unit_pipeline_document({{"degree", 4}, {"schedule", schedule}, {"virtual_stages", virtual_stages}});
}

struct UnitRun {
  double step_ms = 0;
  std::vector<double> idle_ms;  // per stage
  Mixes measured;               // the replay's in-flight chunk passes per stage
  Mixes scheduled;              // the schedule's (what `moesim ledger` uses)
  BuiltStep step;
  ReplayResult replay;
};

// Every GEMM 1 ms, the LM head's free; memory-bound kernels, attention, collectives and P2P free.
// A layer's forward is then 4 GEMMs = 4 ms, its backward 8 ms: B (4 dgrads) 4 ms, W (4 wgrads) 4 ms.
UnitRun run_unit(const std::string& schedule, std::int64_t virtual_stages) {
  test::TempDir dir;
  const Scenario s = load_scenario(dir.write("unit.json", unit_pipeline(schedule, virtual_stages).dump()), {});
  test::FakeCosts costs;
  costs.collective_s = 0;
  costs.free_dimension = 96;
  UnitRun out;
  out.step = build_step(s.arch, build_inventory(s.arch), s.plan, costs, SimOptions{});
  out.replay = replay(out.step.graph, *fair_share(0));
  const TimelineMetrics m = measure(out.step.graph, out.replay);
  out.step_ms = out.replay.makespan * 1e3;
  for (const RankTimeline& rank : m.ranks) out.idle_ms.push_back(rank.idle * 1e3);
  out.measured = measured_chunks_in_flight(out.step, out.replay, s.plan.pp, s.plan.model_chunks());
  out.scheduled = schedule_in_flight(s.plan, out.step.microbatches).chunks;
  return out;
}

void check_bubble(const UnitRun& r, double step_ms, double idle_ms) {
  CHECK(r.step_ms == Approx(step_ms));
  REQUIRE(r.idle_ms.size() == 4);
  for (const double idle : r.idle_ms) {
    CHECK(idle == Approx(idle_ms));
    CHECK(idle / r.step_ms == Approx(idle_ms / step_ms));  // the bubble fraction
  }
}

}  // namespace

// One unit u = one layer's forward = 4 ms; chunk passes below are in u (a layer's backward 2u, its
// B and W u each). Timelines from t = 0, one column per u, "." idle; upper case chunk 0, lower
// case chunk 1; the stages' compute streams run their pass orders (pipeline_schedule.cpp) and a
// pass starts when its input has arrived (P2P free).
TEST_CASE("Unit-time PP4 m=8: 1F1B, interleaved, 1F1B-V, ZB-H1 and ZB-V bubbles and in-flight passes", "[golden]") {
  SECTION("1F1B: a stage is 2 layers, F = 2u, B = 4u; bubble (P-1)(F+B) = 18u of (m+P-1)(F+B) = 66u") {
    // Stage 0: F0 F1 F2 F3, idle 12u until B0 returns, then 1F1B, then idle 2u before B5, B6, B7.
    // Every stage: 8 x 6u = 48u busy of 66u. Stage s holds P - s microbatches.
    const UnitRun r = run_unit("1f1b", 1);
    check_bubble(r, 264, 72);  // 3/11 of the step
    CHECK(r.measured == Mixes{{4}, {3}, {2}, {1}});
    CHECK(r.scheduled == r.measured);
  }
  SECTION("Interleaved 1F1B v=2: chunk = 1 layer, F = u, B = 2u; bubble (P-1)(F+B) / v = 9u of 57u") {
    // s0 t= 0: F0F1F2F3f0f1f2f3F4F5F6. . . b0--F7b1--. f4b2--f5b3--f6B0--f7
    // s1 t= 0: . F0F1F2F3f0f1f2f3F4. . b0--F5b1--F6b2--F7b3--f4B0--f5B1--f6
    // s2 t= 0: . . F0F1F2F3f0f1f2. b0--f3b1--F4b2--F5b3--F6B0--F7B1--f4B2--
    // s3 t= 0: . . . F0F1F2F3f0b0--f1b1--f2b2--f3b3--F4B0--F5B1--F6B2--F7B3
    // s0 t=30: B1--B2--. B3--. b4--. b5--. b6--. b7--B4--B5--B6--B7--
    // s1 t=30: B2--f7B3--. b4--. b5--. b6--. b7--B4--B5--B6--B7--
    // s2 t=30: f5B3--f6b4--f7b5--. b6--. b7--B4--B5--B6--B7--
    // s3 t=30: --f4b4--f5b5--f6b6--f7b7--B4--B5--B6--B7--
    // 48u busy of 57u: the 1F1B bubble over v. Warm-up 2(P-1-s) + (v-1)P forwards, then one more:
    // stage 0 holds 11 chunk passes (7 of chunk 0, 4 of chunk 1), stage 3 five.
    const UnitRun r = run_unit("interleaved_1f1b", 2);
    check_bubble(r, 228, 36);
    CHECK(r.measured == Mixes{{7, 4}, {5, 4}, {4, 3}, {4, 1}});
    CHECK(r.scheduled == r.measured);
  }
  SECTION("1F1B-V: stage s holds layers s and 7-s; the loss on stage 0; 12u of 60u idle, 2P chunk passes held") {
    // s0 t= 0: F0F1F2F3F4F5F6f0b0--f1b1--f2b2--f3b3--F7. . . B0--f4b4--. B1
    // s1 t= 0: . F0F1F2F3F4f0F5f1. b0--f2b1--f3b2--F6. . B0--f4b3--F7B1--f5
    // s2 t= 0: . . F0F1F2f0F3f1F4f2. . b0--f3b1--F5. B0--f4b2--F6B1--f5b3--
    // s3 t= 0: . . . F0f0F1f1F2f2F3f3. . . b0--F4B0--f4b1--F5B1--f5b2--F6B2
    // s0 t=30: --f5b5--. B2--f6b6--. B3--f7b7--B4--. . B5--. . B6--. . B7--
    // s1 t=30: b4--. B2--f6b5--. B3--f7b6--B4--b7--B5--. . B6--. . B7--
    // s2 t=30: F7B2--f6b4--. B3--f7b5--B4--b6--B5--b7--B6--. . B7--
    // s3 t=30: --f6b3--F7B3--f7b4--B4--b5--B5--b6--B6--b7--B7--
    // Microbatch 0 goes down stages 0-3 (chunk 0, t = 0..4), turns on stage 3 (f0 at 4) and back up
    // to the loss on stage 0 (f0 at 7), whose backward b0 (8..10) starts the way back. Stage 0 ends
    // with the backward of chunk 0 waiting on each other stage's (2u idle before B5, B6, B7).
    // 48u busy of 60u on every stage. Each stage peaks at 8 chunk passes, 4 microbatches' worth of
    // its layers (1F1B's largest, interleaved's stage 0 holds 11 passes = 5.5).
    const UnitRun r = run_unit("1f1b_v", 2);
    check_bubble(r, 240, 48);
    CHECK(r.measured == Mixes{{7, 1}, {6, 2}, {5, 3}, {4, 4}});
    CHECK(r.scheduled == r.measured);
    CHECK(run_unit("1f1b_v", 1).step_ms == Approx(240));  // virtual_stages 1 or 2: the V has two chunks
  }
  SECTION("ZB-H1: a stage is 2 layers, F = B = W = 2u; bubble (P-1)(F+B-W) = 6u against 1F1B's (P-1)(F+B+W) = 18u") {
    // In steps of 2u (one pass):
    // s0 t= 0: F0F1F2F3. . . B0W0F4B1W1F5B2W2F6B3W3F7B4W4B5W5B6W6B7W7
    // s1 t= 0: . F0F1F2. . B0F3B1W0F4B2W1F5B3W2F6B4W3F7B5W4B6W5B7W6W7
    // s2 t= 0: . . F0F1. B0F2B1F3B2W0F4B3W1F5B4W2F6B5W3F7B6W4B7W5W6W7
    // s3 t= 0: . . . F0B0F1B1F2B2F3B3W0F4B4W1F5B5W2F6B6W3F7B7W4W5W6W7
    // Stage s idles s steps before its first F and P-1-s waiting for its first B: 3 steps of 27.
    // Stage s keeps its W passes s microbatches behind its B passes and runs them last, where
    // 1F1B idles. Held until W: P microbatches on every stage, 1F1B's largest count (stage 0).
    const UnitRun r = run_unit("zb_h1", 1);
    check_bubble(r, 216, 24);
    CHECK(r.measured == Mixes{{4}, {4}, {4}, {4}});
    CHECK(r.scheduled == r.measured);
    // The gradient hooks wait for the W pass: every FP32 accumulation starts after its unit's W.
    const auto& g = r.step.graph;
    std::size_t hooks = 0;
    for (TaskId a = 0; a < g.size(); ++a) {
      if (std::string(g.task(a).label) != "FP32 grad accumulate") continue;
      for (TaskId w = 0; w < g.size(); ++w) {
        const Task& t = g.task(w);
        if (std::string(t.label) == "weight gradients" && t.rank == g.task(a).rank &&
            t.microbatch == g.task(a).microbatch && t.layer == g.task(a).layer) {
          CHECK(r.replay.start[a] >= r.replay.finish[w]);
          ++hooks;
        }
      }
    }
    // Every microbatch's blocks and LM head; the embedding's gradient is its whole backward (B).
    CHECK(hooks == 8 * (8 + 1));
  }
  SECTION("ZB-V: the V with B and W split (torch ScheduleZBVZeroBubble): 3u of 51u idle, the V's memory") {
    // s0 t= 0: F0F1F2F3F4F5F6f0b0w0f1b1w1f2b2w2f3b3w3F7B0W0f4b4w4B1W1f5b5w5
    // s1 t= 0: . F0F1F2F3F4f0F5f1b0w0f2b1w1f3b2w2F6B0W0f4b3w3F7B1W1f5b4w4B2
    // s2 t= 0: . . F0F1F2f0F3f1F4f2b0w0f3b1w1F5B0W0f4b2w2F6B1W1f5b3w3F7B2W2
    // s3 t= 0: . . . F0f0F1f1F2f2F3f3b0w0F4B0W0f4b1w1F5B1W1f5b2w2F6B2W2f6b3
    // s0 t=30: B2W2f6b6w6B3W3f7b7w7B4W4B5W5B6W6B7W7
    // s1 t=30: W2f6b5w5B3W3f7b6w6B4b7B5W4B6W5B7W6w7W7
    // s2 t=30: f6b4w4B3W3f7b5w5B4b6B5b7B6W4B7W5w6w7W6W7
    // s3 t=30: w3F7B3W3f7b4w4B4b5B5b6B6b7B7W4w5w6w7W5W6W7
    // Stage s idles s units at the start and 3 - s in the warm-up: 3u each, 48u busy of 51u.
    const UnitRun r = run_unit("zbv", 2);
    check_bubble(r, 204, 12);
    CHECK(r.measured == Mixes{{7, 1}, {6, 2}, {5, 3}, {4, 4}});
    CHECK(r.scheduled == r.measured);
  }
}

TEST_CASE("Pass orders of 1F1B-V and ZB-H1: the V's warm-up and the deferred W passes", "[unit]") {
  ParallelPlan p;
  p.pp = 4;
  p.pp_schedule = PipelineSchedule::one_f_one_b_v;
  CHECK(p.model_chunks() == 2);
  const auto last = stage_schedule(p, 3, 8);
  REQUIRE(last.size() == 32);  // 8 microbatches x 2 chunks x (forward, backward)
  // Stage 3: 2(P-s)-1 = 1 forward of chunk 0, then s = 3 pairs (chunk 1, chunk 0), then the turn.
  CHECK((last[0].forward && last[0].chunk == 0 && last[1].chunk == 1 && last[1].microbatch == 0));
  CHECK((!last[8].forward && last[8].chunk == 1 && last[8].microbatch == 0));  // the first backward
  const LayerPlace turn = place_of_virtual_stage(p, 4);
  CHECK((turn.stage == 3 && turn.chunk == 1));
  CHECK(place_of_virtual_stage(p, 7).stage == 0);  // the loss on stage 0
  p.pp_schedule = PipelineSchedule::zb_h1;
  const auto zb = stage_schedule(p, 2, 8);
  REQUIRE(zb.size() == 24);
  CHECK(zb[2].part == BackwardPart::input);   // after P - s - 1 = 1 warm-up forward and one more
  CHECK(zb[7].part == BackwardPart::weight);  // W0 once B0 and B1 are done: s = 2 behind
  CHECK(zb[7].microbatch == 0);
  CHECK(zb.back().part == BackwardPart::weight);
  for (std::int64_t m : {1, 2, 3, 5, 7}) {  // any microbatch count gives every pass once
    p.pp_schedule = PipelineSchedule::zbv;
    CHECK(stage_schedule(p, 1, m).size() == static_cast<std::size_t>(6 * m));
    p.pp_schedule = PipelineSchedule::one_f_one_b_v;
    CHECK(stage_schedule(p, 0, m).size() == static_cast<std::size_t>(4 * m));
  }
}

namespace {
InputError plan_error(const std::vector<std::string>& sets) {
  return test::load_error(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets);
}
}  // namespace

TEST_CASE("Plan checks of the new pipeline schedules name the path and what is allowed", "[unit]") {
  const InputError four = plan_error(
      {"plan.nodes=4", "design=ddp+ep8+pp4", "plan.pipeline.schedule=1f1b_v", "plan.pipeline.virtual_stages=4"});
  CHECK(four.path() == "plan.pipeline.virtual_stages");
  CHECK_THAT(four.message(), Contains("exactly 2 model chunks") && Contains("allowed: 1 (the default) or 2"));
  const InputError zb = plan_error({"plan.nodes=4", "design=ddp+ep8+pp4+v2", "plan.pipeline.schedule=zb_h1"});
  CHECK(zb.path() == "plan.pipeline.virtual_stages");
  CHECK_THAT(zb.message(), Contains("interleaved_1f1b") && Contains("1f1b_v"));
  const InputError split =
      plan_error({"plan.nodes=4", "design=ddp+ep8+pp4+1f1b_v", "plan.pipeline.layer_split=[2, 2, 2, 2]"});
  CHECK(split.path() == "plan.pipeline.layer_split");
  CHECK_THAT(split.message(), Contains("PP x model chunks = 8"));
  const InputError deep = plan_error({"plan.nodes=8", "design=ddp+ep8+pp8+1f1b_v"});  // 16 chunks, 8 layers
  CHECK(deep.path() == "plan.pipeline.degree");
  CHECK_THAT(deep.message(), Contains("16 exceeds the 8 layers"));
  const InputError name = plan_error({"plan.nodes=4", "design=ddp+ep8+pp4", "plan.pipeline.schedule=zb_h2"});
  CHECK(name.path() == "plan.pipeline.schedule");
  CHECK_THAT(name.message(), Contains("zb_h1") && Contains("1f1b_v") && Contains("zbv"));
  // Without PP every schedule is plain gradient accumulation, so any is accepted.
  CHECK(load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), {"plan.pipeline.schedule=zbv"})
            .plan.model_chunks() == 1);
}

TEST_CASE("Design notation names the new schedules and reads back the same plan", "[unit]") {
  for (const std::string design : {"ddp+ep8+pp4+1f1b_v", "ddp+ep8+pp4+zb_h1", "ddp+ep8+pp4+zbv", "fsdp+pp2+zb_h1"}) {
    const Scenario s =
        load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), {"plan.nodes=4", "design=" + design});
    CHECK(design_name(s.plan) == design);
  }
}

TEST_CASE("The critical rank measured alone has the times it has among all ranks'", "[golden]") {
  const UnitRun r = run_unit("interleaved_1f1b", 2);
  const TimelineMetrics all = measure(r.step.graph, r.replay, SplitRanks::all);
  const TimelineMetrics critical = measure(r.step.graph, r.replay, SplitRanks::critical);
  REQUIRE(critical.critical_rank == all.critical_rank);
  REQUIRE(critical.ranks.size() == 4);
  for (std::size_t rank = 0; rank < all.ranks.size(); ++rank) {
    const RankTimeline& a = all.ranks[rank];
    const RankTimeline& c = critical.ranks[rank];
    CHECK(c.bytes == a.bytes);  // counted on every rank
    if (rank == all.critical_rank) {
      CHECK(c.busy == a.busy);
      CHECK(c.finish == a.finish);
      CHECK(c.exposed == a.exposed);
      CHECK(c.exposed_by_kind == a.exposed_by_kind);
      CHECK(c.idle == a.idle);
      CHECK(c.idle > 0);  // the unit pipeline has a bubble on every stage
    } else {
      CHECK(c.idle == 0);  // not measured
      CHECK(c.finish == 0);
      CHECK(a.idle > 0);
    }
  }
}
