// A block under torch.compile (plan.activations.compiled_blocks): the partitioner keeps a norm's
// input and FP32 rstd instead of its output, and the SwiGLU's up/gate outputs instead of its
// product; the routed experts' grouped GEMMs keep what they keep.
#include <catch2/catch.hpp>

#include "models/memory/activations.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
BlockActivations saved(const Scenario& s, std::int64_t layer, bool compiled) {
  ParallelPlan plan = s.plan;
  plan.compiled_blocks = compiled;
  return saved_per_token(s.arch, layer, plan, routed_rows_per_token(s.arch, plan, 1.0));
}
}  // namespace

TEST_CASE("a compiled dense block saves neither its norm outputs nor its SwiGLU product", "[unit][stacks]") {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {});
  const double d = static_cast<double>(s.arch.d_model), h = static_cast<double>(s.arch.dense_hidden), e = 2;
  const BlockActivations eager = saved(s, 0, false), compiled = saved(s, 0, true);
  // Attention: the norm's BF16 output (e d) for one FP32 rstd (4).
  CHECK(eager.attention - compiled.attention == Approx(e * d - 4));
  // MLP: the same for its norm, and the SwiGLU product (e h).
  CHECK(eager.mlp - compiled.mlp == Approx(e * d - 4 + e * h));
  const auto fp32 = static_cast<std::size_t>(SavedFormat::fp32);
  CHECK(compiled.by_format[fp32] - eager.by_format[fp32] == Approx(8));
}

TEST_CASE("a compiled MoE block recomputes its router input but keeps the experts' rows", "[unit][stacks]") {
  const Scenario s = test::fig8("ddp", 32);
  const double d = static_cast<double>(s.arch.d_model), e = 2;
  const double shared = static_cast<double>(s.arch.moe->shared_experts * s.arch.moe->shared_hidden);
  std::int64_t layer = 0;
  while (!s.arch.is_moe_layer(layer)) ++layer;
  const BlockActivations eager = saved(s, layer, false), compiled = saved(s, layer, true);
  CHECK(eager.attention - compiled.attention == Approx(e * d - 4));
  // The router's input for its rstd, and each shared expert's SwiGLU product.
  CHECK(eager.mlp - compiled.mlp == Approx(e * d - 4 + e * shared));
}

TEST_CASE("Transformer Engine's FP8 linears keep their quantized inputs under a compiled plan", "[unit][stacks]") {
  Scenario s = load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {});
  s.plan.precision.library = LowPrecisionLibrary::transformer_engine;
  for (auto& p : s.plan.precision.linears) p = GemmPrecision::fp8;
  const BlockActivations eager = saved(s, 0, false), compiled = saved(s, 0, true);
  CHECK(compiled.total() == Approx(eager.total()));
}
