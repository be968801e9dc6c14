// Parameter counts and FLOPs/token of the seed's Figure 8 model (seed Section 4.2, DESIGN.md).
#include <catch2/catch.hpp>

#include "models/arch/flops.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("Figure 8 model: total and active parameters for N = 8..128", "[unit]") {
  // Published totals (seed Figure 8b axis and the report): 4.6/13/19/24/47B, ~3.17B active.
  const std::vector<std::pair<int, double>> expected = {{8, 4.58}, {32, 13.04}, {48, 18.67}, {64, 24.31}, {128, 46.86}};
  for (const auto& [n, total_b] : expected) {
    const Scenario s = test::fig8("ddp", n);
    const Inventory inv = build_inventory(s.arch);
    INFO("N = " << n);
    CHECK(inv.params_total / 1e9 == Approx(total_b).margin(0.005));
    CHECK(inv.params_active / 1e9 == Approx(3.17).margin(0.005));
  }
}

TEST_CASE("Figure 8 model: Olmo-core FLOPs per token are 18.17-18.19 GFLOP", "[unit]") {
  for (int n : {8, 32, 48, 64, 128}) {
    const Scenario s = test::fig8("ddp", n);
    const Inventory inv = build_inventory(s.arch);
    const FlopsPerToken f = flop_conventions().get("olmo-core").per_token(s.arch, inv);
    INFO("N = " << n << " flops " << f.total);
    CHECK(f.total / 1e9 >= 18.165);
    CHECK(f.total / 1e9 <= 18.195);
    // The only N-dependent term is the router: 7 MoE layers x 6 d N.
    CHECK(f.router == Approx(7.0 * 6 * 4096 * n));
    CHECK(f.convention == "olmo-core");
  }
}

TEST_CASE("FLOP conventions differ only where they should", "[unit]") {
  const Scenario s = test::fig8("ddp", 48);
  const Inventory inv = build_inventory(s.arch);
  const auto olmo = flop_conventions().get("olmo-core").per_token(s.arch, inv);
  const auto palm = flop_conventions().get("palm").per_token(s.arch, inv);
  const auto six_n = flop_conventions().get("6n").per_token(s.arch, inv);
  // Weight terms agree; PaLM counts attention over all S keys, Olmo-core over (S+1)/2.
  CHECK(palm.attention_projections == Approx(olmo.attention_projections));
  CHECK(palm.experts == Approx(olmo.experts));
  CHECK(palm.lm_head == Approx(olmo.lm_head));
  CHECK(palm.attention_scores == Approx(olmo.attention_scores * 2 * 8192 / 8193.0));
  CHECK(six_n.attention_scores == 0);
  CHECK(six_n.total < olmo.total);
  CHECK_THROWS_WITH(flop_conventions().get("chinchilla"), Catch::Contains("valid: 6n, megatron, olmo-core, palm"));
}

TEST_CASE("Inventory: stacked experts, GQA, tied embeddings and dense-first layers", "[unit]") {
  Scenario s = test::fig8("ddp", 8);
  const Inventory inv = build_inventory(s.arch);
  const auto find = [&](const std::string& name) -> const TensorInfo& {
    for (const auto& t : inv.tensors)
      if (t.name == name) return t;
    FAIL("no tensor " << name);
    return inv.tensors.front();
  };
  CHECK(find("blocks.1.moe.experts.w_up_gate").shape == std::vector<std::int64_t>{8, 8192, 4096});
  CHECK(find("blocks.1.moe.experts.w_down").shape == std::vector<std::int64_t>{8, 4096, 4096});
  CHECK(find("blocks.0.mlp.w_up_gate").shape == std::vector<std::int64_t>{40960, 4096});
  CHECK(find("blocks.3.attention.w_k").shape == std::vector<std::int64_t>{1024, 4096});
  CHECK(find("blocks.1.moe.router").cls == TensorClass::router);
  CHECK(find("lm_head.w_out").cls == TensorClass::lm_head);
  s.arch.tie_embeddings = true;
  const Inventory tied = build_inventory(s.arch);
  CHECK(tied.params_total == Approx(inv.params_total - 100352.0 * 4096));
}
