// Pipeline stages with no decoder layer (Megatron-Core's layouts "E|...|L" and DeepSeek-V3's
// "Et|(tt|)*30mL"): the chunk still runs its embedding or loss and passes activations on.
#include <catch2/catch.hpp>

#include <string>

#include "models/arch/inventory.hpp"
#include "models/input/scenario.hpp"
#include "sim/engine.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/sim/unit_pipeline.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// The unit-time pipeline (tests/sim/unit_pipeline.hpp) under 1F1B with `pipeline`'s split.
Scenario unit_pipeline(const nlohmann::json& pipeline) {
  test::TempDir dir;
  return load_scenario(dir.write("unit.json", test::unit_pipeline_document(pipeline).dump()), {});
}

}  // namespace

// Every GEMM 1 ms, the LM head's free; memory-bound kernels, attention, collectives and P2P free.
// A layer's forward is 4 GEMMs = u = 4 ms, its backward 2u. "E|tttt|tttt|L": stages 0 and 3 hold
// no layer (their passes take no time), stages 1 and 2 four layers each: F = 4u, B = 8u.
// Stage 1 (warm-up 2): F0 0-4, F1 4-8, F2 8-12, B0 20-28, F3 28-32, B1 32-40, F4 40-44, B2 44-52,
//   F5 52-56, B3 56-64, F6 64-68, B4 68-76, F7 76-80, B5 80-88, B6 92-100, B7 100-108.
// Stage 2 (warm-up 1): F0 4-8, F1 8-12, B0 12-20, F2 20-24, B1 24-32, F3 32-36, B2 36-44, F4 44-48,
//   B3 48-56, F5 56-60, B4 60-68, F6 68-72, B5 72-80, F7 80-84, B6 84-92, B7 92-100.
// The step ends at 108u = 432 ms when stage 0 has taken B7: 96u busy on stages 1 and 2, none on 0, 3.
TEST_CASE("Unit-time PP4 1F1B with two empty stages: a two-stage pipeline inside four", "[golden]") {
  for (const nlohmann::json& pipeline : {nlohmann::json{{"degree", 4}, {"layout", "E|tttt|tttt|L"}},
                                         nlohmann::json{{"degree", 4}, {"layer_split", {0, 4, 4, 0}}}}) {
    INFO(pipeline.dump());
    const Scenario s = unit_pipeline(pipeline);
    REQUIRE(stage_layer_counts(s.plan, s.arch) == std::vector<std::int64_t>{0, 4, 4, 0});
    test::FakeCosts costs;
    costs.collective_s = 0;
    costs.free_dimension = 96;
    const BuiltStep step = build_step(s.arch, build_inventory(s.arch), s.plan, costs, SimOptions{});
    const ReplayResult r = replay(step.graph, *fair_share(0));
    const TimelineMetrics m = measure(step.graph, r);
    CHECK(r.makespan * 1e3 == Approx(432));
    REQUIRE(m.ranks.size() == 4);
    const auto compute = static_cast<std::size_t>(TaskKind::compute);
    CHECK(m.ranks[0].busy_by_kind[compute] == Approx(0).margin(1e-12));
    CHECK(m.ranks[1].busy_by_kind[compute] * 1e3 == Approx(384));
    CHECK(m.ranks[2].busy_by_kind[compute] * 1e3 == Approx(384));
    CHECK(m.ranks[3].busy_by_kind[compute] == Approx(0).margin(1e-12));
    // Stage 0 holds its embedding passes from forward to backward, as the schedule says; stage
    // 3's passes take no time at all here (the head is free), so none is held while another runs.
    const auto measured = measured_chunks_in_flight(step, r, s.plan.pp, s.plan.model_chunks());
    const auto scheduled = schedule_in_flight(s.plan, step.microbatches).chunks;
    CHECK(scheduled == std::vector<std::vector<std::int64_t>>{{4}, {3}, {2}, {1}});
    CHECK(measured == std::vector<std::vector<std::int64_t>>{{4}, {3}, {2}, {0}});
  }
}
