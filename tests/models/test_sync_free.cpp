// Megatron-Core's sync-free MoE path (plan.expert_parallel.rank_capacity_factor) and its paged
// stash (plan.activations.moe_paged_stash): the rows they hold, by hand, and their refusals (the
// step they rerun: tests/sim/test_sync_free_rerun.cpp).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/memory/activations.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Matchers::Contains;

namespace {

// Qwen3-30B-A3B (d 2048, 128 experts of hidden 768, top-8) on HybridEP, recompute none, the
// router probabilities multiplied in the activation (the megatron-core preset).
Scenario qwen3(const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets{"plan.expert_parallel.transport=\"hybridep\"", "plan.activations.recompute=\"none\""};
  sets.insert(sets.end(), more.begin(), more.end());
  return test::gallery("qwen3-30b-a3b", sets);
}

constexpr double kK = 8, kD = 2048, kH = 768, kBf16 = 2;

}  // namespace

TEST_CASE("The sync-free budget and the paged stash size the routed experts' tensors", "[unit]") {
  const Scenario plain = qwen3();
  const Scenario budget = qwen3({"plan.expert_parallel.rank_capacity_factor=1.5"});
  const Scenario stash =
      qwen3({"plan.expert_parallel.rank_capacity_factor=1.5", "plan.activations.moe_paged_stash=true",
             "plan.activations.moe_paged_stash_cuda_factor=1.2"});
  const RoutedRows p = routed_rows_per_token(plain.arch, plain.plan, 1.0);
  const RoutedRows b = routed_rows_per_token(budget.arch, budget.plan, 1.0);
  const RoutedRows s = routed_rows_per_token(stash.arch, stash.plan, 1.0);
  // Dropless under uniform routing: K rows a token everywhere.
  CHECK((p.computed == kK && p.dispatch == kK && p.saved == kK && p.working == kK));
  // The static budget: every expert tensor K x 1.5; the GEMMs still compute K.
  CHECK((b.computed == kK && b.dispatch == Approx(12) && b.saved == Approx(12) && b.working == Approx(12)));
  // The stash: saved tensors K x 1.2 of pages, live ones still at the budget.
  CHECK((s.computed == kK && s.dispatch == Approx(9.6) && s.saved == Approx(9.6) && s.working == Approx(12)));
  CHECK(stash.plan.routing.paged_stash_factor == 1.2);
  CHECK(qwen3({"plan.expert_parallel.rank_capacity_factor=1.5", "plan.activations.moe_paged_stash=true"})
            .plan.routing.paged_stash_factor == Approx(1.10));  // Megatron-Core's default
  // What an MoE block saves a token: the dispatched input (d), fc1's output (2h) and the SwiGLU
  // product (h), each BF16, at the saved rows.
  const std::int64_t layer = 0;
  REQUIRE(plain.arch.is_moe_layer(layer));
  const double row = (kD + 2 * kH + kH) * kBf16;
  const double base = saved_per_token(plain.arch, layer, plain.plan, p).mlp;
  CHECK(saved_per_token(budget.arch, layer, budget.plan, b).mlp - base == Approx((12 - kK) * row));
  CHECK(saved_per_token(stash.arch, layer, stash.plan, s).mlp - base == Approx((9.6 - kK) * row));
  // The backward's widest gradient (fc1's output gradient) takes the budget's rows.
  CHECK(backward_working_per_token(budget.arch, layer, budget.plan, b) -
            backward_working_per_token(plain.arch, layer, plain.plan, p) ==
        Approx((12 - kK) * 2 * kH * kBf16));
}

TEST_CASE("The sync-free path and the paged stash refuse what Megatron-Core or moesim cannot run", "[unit]") {
  const auto refused = [](const std::vector<std::string>& sets) {
    return test::load_error(test::source_path("scenarios/gallery/qwen3-30b-a3b.json"), sets);
  };
  const InputError transport = refused({"plan.expert_parallel.rank_capacity_factor=1.5"});
  CHECK(transport.path() == "plan.expert_parallel.rank_capacity_factor");
  CHECK_THAT(transport.message(), Contains("allowed: expert_parallel.transport \"hybridep\""));
  const std::string hybridep = "plan.expert_parallel.transport=\"hybridep\"";
  const InputError stash = refused({hybridep, "plan.activations.moe_paged_stash=true"});
  CHECK(stash.path() == "plan.activations.moe_paged_stash");
  CHECK_THAT(stash.message(), Contains("capacity factor must be set"));
  const InputError offload =
      refused({hybridep, "plan.expert_parallel.rank_capacity_factor=1.5", "plan.activations.moe_paged_stash=true",
               "plan.activations.offload_modules=[\"moe_act\"]"});
  CHECK(offload.path() == "plan.activations.offload_modules");
  CHECK_THAT(refused({hybridep, "plan.expert_parallel.rank_capacity_factor=1.5",
                      "plan.activations.moe_paged_stash_cuda_factor=1.2"})
                 .message(),
             Contains("allowed with moe_paged_stash true"));
  CHECK(refused({hybridep, "plan.expert_parallel.rank_capacity_factor=1.5",
                 "plan.activations.moe_paged_stash_cpu_factor=1"})
            .path() == "plan.activations.moe_paged_stash_cpu_factor");
  CHECK(refused({hybridep, "plan.expert_parallel.rank_capacity_factor=0.8"}).path() ==
        "plan.expert_parallel.rank_capacity_factor");
  CHECK_THAT(
      refused({hybridep, "plan.expert_parallel.rank_capacity_factor=1.5", "plan.routing.dropless=false"}).message(),
      Contains("routing.dropless true"));
}
