// `moesim compare --stack`: one plan under several training stacks, each stack's values replacing
// the plan's own, and each step against the first stack's phase by phase.
#include <catch2/catch.hpp>

#include "studies/compare_stacks.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kEp8 = "scenarios/fig8/moe-ddp-ep8.json";

bool sets(const PointOverrides& o, const std::string& path) {
  for (const auto& [p, v] : o) {
    if (p == path) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("a stack's overrides are its values for the plan's design", "[unit][stacks]") {
  const PointOverrides ddp = stack_overrides("megatron-core", "ddp");
  CHECK(ddp.front().first == "plan.stack");
  CHECK(sets(ddp, "plan.ddp.grad_sync"));
  CHECK(sets(ddp, "plan.activations.loss"));
  const PointOverrides fsdp = stack_overrides("megatron-core", "fsdp");
  CHECK_FALSE(sets(fsdp, "plan.ddp.grad_sync"));
  CHECK(sets(fsdp, "plan.activations.loss"));
}

TEST_CASE("compare --stack replaces the plan's own values and explains the step by phase", "[unit][stacks]") {
  const ScenarioSource source = read_scenario(test::source_path(kEp8), {});
  const StackComparison c = compare_stacks(source, "ddp", {"olmo-core", "megatron-core"}, 1);
  REQUIRE(c.points.points.size() == 2);
  REQUIRE(c.points.points[1].ok);
  // The Figure 8 plan keeps the eager loss and all-reduce as its own keys; under the comparison
  // each stack's values win.
  CHECK(c.points.points[0].scenario->plan.loss == LossImpl::compiled);
  CHECK(c.points.points[1].scenario->plan.loss == LossImpl::vocab_parallel);
  CHECK(c.points.points[1].scenario->plan.grad_sync == GradSync::reduce_scatter);
  CHECK(c.against_first[0].empty());
  // Megatron's unfused vocab-parallel cross-entropy makes the forward longer, its fused Adam the
  // optimizer shorter.
  double forward = 0, optimizer = 0;
  for (const PhaseDifference& d : c.against_first[1]) {
    if (d.phase == "forward") forward = d.best_s - d.runner_up_s;
    if (d.phase == "optimizer") optimizer = d.best_s - d.runner_up_s;
  }
  CHECK(forward > 0);
  CHECK(optimizer < 0);
  CHECK_THROWS_WITH(compare_stacks(source, "ddp", {"megatron"}, 1),
                    Catch::Contains("--stack") && Catch::Contains("megatron-core"));
}
