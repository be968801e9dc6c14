// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Section 4: the activation memory per transformer layer of a GPT block (LayerNorm, multi-head
// attention without a fused kernel, GeLU MLP of width 4h, dropout after the attention
// probabilities and after both residual branches), 16-bit activations, s tokens x b sequences:
//   no parallelism                       sbh (34 + 5as/h)                 (Eq. 1)
//   tensor parallelism t                 sbh (10 + 24/t + 5as/(ht))       (Eq. 2)
//   tensor + sequence parallelism        sbh/t (34 + 5as/h)               (Eq. 4)
//   with selective recompute (+ TP, SP)  34 sbh/t                         (Section 4.3)
// checked term by term against moesim's saved activations (plan.kernels.attention "unfused",
// architecture.dropout) on the paper's model configurations (Table 3).
#include <catch2/catch.hpp>

#include "models/costs/layer_ops.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/memory/activations.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

struct PaperModel {
  const char* name;
  std::int64_t heads, h;
};
// Table 3: a, h (s = 2048, t = 8 in every row).
constexpr PaperModel kModels[] = {
    {"22B", 64, 6144}, {"175B (GPT-3)", 96, 12288}, {"530B", 128, 20480}, {"1T", 160, 25600}};
constexpr double kS = 2048;

Scenario gpt(const PaperModel& m, std::int64_t t, bool sp, Recompute recompute) {
  Scenario s = load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {});
  Architecture& a = s.arch;
  a.d_model = m.h;
  a.sequence_length = static_cast<std::int64_t>(kS);
  a.norm = NormKind::layernorm;
  a.attention.num_heads = a.attention.num_kv_heads = m.heads;
  a.attention.head_dim = m.h / m.heads;
  a.attention.qk_norm = false;
  a.mlp.activation = MlpActivation::gelu;
  a.dense_hidden = 4 * m.h;
  a.dropout = {0.1, 0.1};
  s.plan.tp = t;
  s.plan.sequence_parallel = sp;
  s.plan.recompute = recompute;
  s.plan.attention_kernel = AttentionKernel::unfused;
  REQUIRE(bytes_of(s.plan.precision.compute) == 2);
  return s;
}

// Bytes per layer for one sequence (b = 1): moesim counts per token of the microbatch.
double per_layer(const Scenario& s) { return saved_per_token(s.arch, 0, s.plan, {}).total() * kS; }

}  // namespace

TEST_CASE("Korthikanti et al. 2022: activation memory per layer, term by term, on the paper's models", "[golden]") {
  for (const PaperModel& m : kModels) {
    INFO(m.name);
    const double sbh = kS * dbl(m.h), scores = 5 * dbl(m.heads) * kS / dbl(m.h);
    const double t = 8;
    CHECK(per_layer(gpt(m, 1, false, Recompute::none)) == Approx(sbh * (34 + scores)).epsilon(1e-12));
    CHECK(per_layer(gpt(m, 8, false, Recompute::none)) == Approx(sbh * (10 + 24 / t + scores / t)).epsilon(1e-12));
    CHECK(per_layer(gpt(m, 8, true, Recompute::none)) == Approx(sbh / t * (34 + scores)).epsilon(1e-12));
    // Selective recompute: Megatron-LM's recomputes the core attention (the 5as/h term); moesim's
    // also recomputes the MLP's activation output (the down projection's input, 8sbh/t).
    CHECK(per_layer(gpt(m, 8, true, Recompute::selective)) == Approx(sbh / t * (34 - 8)).epsilon(1e-12));
  }
}

TEST_CASE("Korthikanti et al. 2022: the terms moesim adds or drops beside the paper's", "[golden]") {
  const PaperModel& m = kModels[1];
  const double sbh = kS * dbl(m.h), a = dbl(m.heads);
  // Without dropout: no masks (sbh in each branch) and no dropout output over the probabilities.
  Scenario none = gpt(m, 1, false, Recompute::none);
  none.arch.dropout = {};
  CHECK(per_layer(none) == Approx(sbh * 32 + 2 * a * kS * kS).epsilon(1e-12));
  // A fused (flash) kernel saves no S x S term but its FP32 log-sum-exp per head; attention
  // dropout then saves nothing (the kernel regenerates its mask from the RNG state).
  Scenario flash = gpt(m, 1, false, Recompute::none);
  flash.plan.attention_kernel = AttentionKernel::profile;
  CHECK(per_layer(flash) == Approx(sbh * 34 + 4 * a * kS).epsilon(1e-12));
  // Full recompute keeps the layer input alone (2sbh; Section 4.3's "2sbhL" for the model).
  CHECK(per_layer(gpt(m, 1, false, Recompute::full)) == Approx(2 * sbh).epsilon(1e-12));
  // Hidden dropout after a Mamba-2 mixer (Megatron-Core MambaLayer's bias-dropout-add): one mask
  // byte per element of its output.
  Scenario hybrid = test::gallery("nemotron-h-8b");
  std::int64_t mamba = 0;
  while (hybrid.arch.layer(mamba).mixer != Mixer::mamba) ++mamba;
  const double before = saved_per_token(hybrid.arch, mamba, hybrid.plan, {}).attention;
  hybrid.arch.dropout.hidden = 0.1;
  CHECK(saved_per_token(hybrid.arch, mamba, hybrid.plan, {}).attention ==
        Approx(before + dbl(hybrid.arch.d_model) * hybrid.plan.sequence_share()).epsilon(1e-12));
}

TEST_CASE("The unfused attention kernel costs its score matrix's HBM traffic and refuses CP", "[unit]") {
  const PaperModel& m = kModels[1];
  const Scenario unfused = gpt(m, 8, true, Recompute::none);
  Scenario flash = unfused;
  flash.plan.attention_kernel = AttentionKernel::profile;
  const ProfileCostBook costs(unfused.hardware, unfused.cost_models);
  const auto core = [&](const Scenario& s) {
    for (const LayerOp& op : layer_ops(s.arch, s.plan, costs, 0, 4 * kS, {}).ops)
      if (op.kind == LayerOpKind::attention_core) return op.times;
    FAIL("no attention core");
    return PassTimes{};
  };
  // 4 sequences x 12 local heads x S^2 probabilities: the softmax reads and writes 2 bytes each,
  // the dropout reads 2 and writes 2 and a mask byte; the two bmm's come on top.
  const double scores = 4 * 12 * kS * kS;
  CHECK(core(unfused).fwd > costs.memory(scores * 9, MemoryKernel::elementwise));
  CHECK(core(unfused).bwd > costs.memory(scores * 11, MemoryKernel::elementwise));
  CHECK(core(unfused).fwd > 2 * core(flash).fwd);
  CHECK(core(unfused).wgrad == 0);
  // Selective recompute runs the core attention's forward again in the backward.
  const Scenario selective = gpt(m, 8, true, Recompute::selective);
  const LayerOps with = layer_ops(selective.arch, selective.plan, costs, 0, 4 * kS, {});
  Scenario fused_selective = selective;
  fused_selective.plan.attention_kernel = AttentionKernel::profile;
  const LayerOps without = layer_ops(fused_selective.arch, fused_selective.plan, costs, 0, 4 * kS, {});
  CHECK(with.partial_recompute == Approx(without.partial_recompute + core(unfused).fwd).epsilon(1e-12));
  // Megatron-Core's CP runs a fused kernel per KV chunk.
  Scenario cp = unfused;
  cp.plan.tp = 4;
  cp.plan.cp = 2;
  CHECK_THROWS_WITH(validate_plan(cp.plan, cp.arch, "plan.json", "plan"), Catch::Contains("kernels.attention"));
  CHECK_NOTHROW(validate_plan(unfused.plan, unfused.arch, "plan.json", "plan"));
}
