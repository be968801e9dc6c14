// Seed Figure 10: per-tensor, concatenate-then-shard and same-param-count layouts.
#include <catch2/catch.hpp>

#include "models/memory/optimizer_layouts.hpp"

using namespace moesim;

namespace {
const std::vector<double> kTensors = {240, 80, 120, 200};  // the figure's illustrative units
}

TEST_CASE("Figure 10: per-tensor layout at D = 4 gives 160 units per rank", "[unit]") {
  const auto r = optimizer_layouts().get("per_tensor").assign(kTensors, 4, 1);
  CHECK(r.per_rank == std::vector<double>{160, 160, 160, 160});
  CHECK(r.largest == 160);
  CHECK(r.even_share == 160);
  CHECK(r.replicated_tensors == 0);
  CHECK(r.cut_tensors == 4);
}

TEST_CASE("Figure 10: a non-divisible D leaves tensors replicated", "[unit]") {
  // D = 3: 240 and 120 divide, 80 and 200 stay whole on every rank.
  const auto r3 = optimizer_layouts().get("per_tensor").assign(kTensors, 3, 1);
  CHECK(r3.replicated_tensors == 2);
  CHECK(r3.largest == Approx(80 + 80 + 40 + 200));
  CHECK(r3.largest > r3.even_share);
  const auto r7 = optimizer_layouts().get("per_tensor").assign(kTensors, 7, 1);
  CHECK(r7.replicated_tensors == 4);
  CHECK(r7.largest == 640);
  // The Olmo rule also keeps tensors below min_numel replicated.
  const auto small = optimizer_layouts().get("per_tensor").assign(kTensors, 4, 100);
  CHECK(small.replicated_tensors == 1);
  CHECK(small.largest == Approx(60 + 80 + 30 + 50));
}

TEST_CASE("Figure 10: concatenate-then-shard balances, same-param-count does not", "[unit]") {
  const auto concat = optimizer_layouts().get("concat_then_shard").assign(kTensors, 4, 1);
  CHECK(concat.largest == 160);
  CHECK(concat.replicated_tensors == 0);
  CHECK(concat.cut_tensors == 2);  // boundaries at 160/320/480 cut tensors 0 and 3
  const auto concat3 = optimizer_layouts().get("concat_then_shard").assign(kTensors, 3, 1);
  CHECK(concat3.largest == Approx(214));  // ceil(640 / 3)
  const auto same = optimizer_layouts().get("same_param_count").assign(kTensors, 4, 1);
  CHECK(same.per_rank == std::vector<double>{240, 80, 120, 200});
  CHECK(same.largest / same.even_share == Approx(1.5));
  CHECK_THROWS_WITH(optimizer_layouts().get("round_robin"),
                    Catch::Contains("valid: concat_then_shard, per_tensor, same_param_count"));
}
