// Rank layout (PP outermost, DP, EP-MP innermost), stage split, microbatches, in-flight counts.
#include <catch2/catch.hpp>

#include "models/memory/ledger.hpp"
#include "models/plan/rank_layout.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("Rank coordinates put EP-MP innermost and PP outermost", "[unit]") {
  ParallelPlan p;
  p.nodes = 4;
  p.gpus_per_node = 8;
  p.pp = 2;
  p.ep = 8;
  REQUIRE(p.dp() == 16);
  REQUIRE(p.ep_dp() == 2);
  const RankCoords r9 = coords_of(p, 9);
  CHECK(r9.stage == 0);
  CHECK(r9.dp == 9);
  CHECK(r9.ep_mp == 1);  // ranks 8..15 (the second node) hold expert shards 0..7 again
  CHECK(r9.ep_dp == 1);
  const RankCoords r17 = coords_of(p, 17);
  CHECK(r17.stage == 1);
  CHECK(r17.ep_mp == 1);
}

TEST_CASE("Stage split: ceil per stage with an uneven last stage, or as given", "[unit]") {
  Scenario s = test::fig8("ddp", 8);
  s.plan.pp = 3;
  CHECK(stage_layer_counts(s.plan, s.arch) == std::vector<std::int64_t>{3, 3, 2});
  s.plan.pp = 8;
  CHECK(stage_layer_counts(s.plan, s.arch) == std::vector<std::int64_t>(8, 1));
  s.plan.pp = 2;
  s.plan.pp_layer_split = {5, 3};
  CHECK(stage_layer_counts(s.plan, s.arch) == std::vector<std::int64_t>{5, 3});
  const Inventory inv = build_inventory(s.arch);  // stage tensors point into it
  const auto tensors0 = stage_tensors(inv, s.arch, s.plan, 0);
  const auto tensors1 = stage_tensors(inv, s.arch, s.plan, 1);
  CHECK(tensors0.front().tensor->name == "embeddings");
  CHECK(tensors1.back().tensor->name == "lm_head.w_out");
}

TEST_CASE("Microbatches follow global batch / (microbatch tokens x DP)", "[unit]") {
  Scenario s = test::fig8("ddp", 48);
  CHECK(batch_shape(s.plan, s.arch).microbatch_tokens == 16384);
  CHECK(batch_shape(s.plan, s.arch).microbatches == 32);  // 4Mi tokens / (16Ki x 8)
  s.plan.global_batch_tokens = 131072;
  CHECK(batch_shape(s.plan, s.arch).microbatches == 1);
}
