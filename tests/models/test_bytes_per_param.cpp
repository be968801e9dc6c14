// Seed Figure 9: persistent bytes per parameter under DDP, the distributed optimizer and EP.
#include <catch2/catch.hpp>

#include "models/memory/ledger.hpp"
#include "models/plan/rank_layout.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
double bytes_per_param(const TensorInfo& t, std::int64_t dp, std::int64_t ep, bool dist_opt) {
  ParallelPlan plan;
  plan.design = "ddp";
  plan.nodes = dp / 8 > 0 ? dp / 8 : 1;
  plan.gpus_per_node = dp / plan.nodes;
  plan.ep = ep;
  plan.distributed_optimizer = dist_opt;
  const bool routed = t.cls == TensorClass::routed_expert;
  return test::persistent_bytes_per_param(t, static_cast<double>(t.numel) / static_cast<double>(routed ? ep : 1),
                                          routed ? plan.ep_dp() : plan.dp(), plan);
}
}  // namespace

TEST_CASE("Figure 9: 18 B naive DDP, 6 + 12/D with the distributed optimizer, 6/M_E + 12/D for experts", "[unit]") {
  const TensorInfo dense{"dense", {4096, 4096}, 4096LL * 4096, TensorClass::attention, 0};
  const TensorInfo expert{"experts", {64, 8192, 4096}, 64LL * 8192 * 4096, TensorClass::routed_expert, 1};
  CHECK(bytes_per_param(dense, 8, 1, false) == Approx(18.0));
  CHECK(bytes_per_param(dense, 8, 1, true) == Approx(7.5));
  CHECK(bytes_per_param(expert, 8, 4, true) == Approx(3.0));
  for (std::int64_t d : {2, 4, 8, 16, 32, 64}) {
    CHECK(bytes_per_param(dense, d, 1, true) == Approx(6.0 + 12.0 / static_cast<double>(d)));
    for (std::int64_t me : {1, 2, 4, 8}) {
      if (d % me != 0) continue;
      INFO("D = " << d << ", M_E = " << me);
      CHECK(bytes_per_param(expert, d, me, true) ==
            Approx(6.0 / static_cast<double>(me) + 12.0 / static_cast<double>(d)));
      CHECK(bytes_per_param(expert, d, me, false) == Approx(18.0 / static_cast<double>(me)));
    }
  }
}

TEST_CASE("Muon keeps one state and BF16 moments halve the state bytes", "[unit]") {
  const TensorInfo dense{"dense", {4096, 4096}, 4096LL * 4096, TensorClass::attention, 0};
  ParallelPlan plan;
  plan.optimizer.kind = OptimizerKind::muon;
  plan.distributed_optimizer = false;
  LocalTensor lt{&dense, static_cast<double>(dense.numel), plan.dp()};
  OptimizerShardReport report;
  double sum = 0;
  for (const auto& item : persistent_state({lt}, plan, report)) sum += item.bytes;
  CHECK(sum / static_cast<double>(dense.numel) == Approx(2 + 4 + 4 + 4));
  plan.optimizer.kind = OptimizerKind::adamw;
  plan.optimizer.state_dtype = DType::bf16;
  sum = 0;
  for (const auto& item : persistent_state({lt}, plan, report)) sum += item.bytes;
  CHECK(sum / static_cast<double>(dense.numel) == Approx(2 + 4 + 4 + 2 + 2));
}
