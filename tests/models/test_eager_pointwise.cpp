// PyTorch's eager pointwise ops (plan.kernels.pointwise "eager", torchtitan's default): RoPE's
// FP32 upcast, complex multiply and cast back, and the gated activation's separate silu and
// product, each priced as the HBM bytes it moves beyond the fused pass; silu's output kept for the
// product's backward; nothing changes under a compiled block, for a non-gated MLP or without RoPE.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "models/costs/layer_ops.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/memory/activations.hpp"
#include "models/stacks/stack_preset.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kLlama = "scenarios/gallery/llama3-8b.json";  // torchtitan, FSDP2, 8 x H100
constexpr double kTokens = 8192;

const LayerOp& op_of(const LayerOps& l, LayerOpKind kind) {
  for (const auto& op : l.ops)
    if (op.kind == kind) return op;
  FAIL("no such op: " << name_of(kind));
  return l.ops.front();
}

Scenario llama(const std::vector<std::string>& sets) {
  std::vector<std::string> all{"plan.activations.recompute=\"none\""};
  all.insert(all.end(), sets.begin(), sets.end());
  return load_scenario(test::source_path(kLlama), all);
}
}  // namespace

TEST_CASE("torchtitan runs RoPE and SwiGLU as eager PyTorch ops, Megatron-Core's presets fuse them", "[unit]") {
  const Scenario titan = llama({});
  CHECK(titan.plan.pointwise_kernels == PointwiseKernels::eager);
  CHECK(titan.plan.eager_pointwise());
  const Scenario megatron = llama({"plan.stack=\"megatron-core\""});
  CHECK(megatron.plan.pointwise_kernels == PointwiseKernels::fused);
  for (const char* name : {"megatron-core", "megatron-bridge"}) {
    INFO(name);
    const auto& values = stack_presets().get(name).values();
    const auto it =
        std::find_if(values.begin(), values.end(), [](const StackValue& v) { return v.path == "kernels.pointwise"; });
    REQUIRE(it != values.end());
    CHECK(it->value == "\"fused\"");
  }
  // A compiled block fuses them whatever the key says.
  CHECK_FALSE(llama({"plan.activations.compiled_blocks=true"}).plan.eager_pointwise());
}

TEST_CASE("Eager RoPE and SwiGLU cost their extra HBM passes over the fused ones", "[unit]") {
  const Scenario eager = llama({});
  const Scenario fused = llama({"plan.kernels.pointwise=\"fused\""});
  const ProfileCostBook costs(eager.hardware, eager.cost_models);
  const LayerOps e = layer_ops(eager.arch, eager.plan, costs, 0, kTokens, {});
  const LayerOps f = layer_ops(fused.arch, fused.plan, costs, 0, kTokens, {});
  const auto memory = [&](double bytes) { return costs.memory(bytes, MemoryKernel::elementwise); };
  // Llama 3 8B: q 32 x 128, k 8 x 128 (4096 + 1024 elements a token); SwiGLU 14336 wide.
  const double roped = kTokens * (4096 + 1024), gated = kTokens * 14336;
  // RoPE: 2e + 16 bytes an element each way against the fused 2e (forward) and 4e (backward).
  const LayerOp& attn_e = op_of(e, LayerOpKind::attention_elementwise);
  const LayerOp& attn_f = op_of(f, LayerOpKind::attention_elementwise);
  CHECK(attn_e.times.fwd - attn_f.times.fwd == Approx(memory(roped * 16)).epsilon(1e-9));
  CHECK(attn_e.times.bwd - attn_f.times.bwd == Approx(memory(roped * 12)).epsilon(1e-9));
  // SwiGLU: 5e against 3e forward, 9e against 6e backward (e = 2).
  const LayerOp& mlp_e = op_of(e, LayerOpKind::dense_mlp);
  const LayerOp& mlp_f = op_of(f, LayerOpKind::dense_mlp);
  CHECK(mlp_e.times.fwd - mlp_f.times.fwd == Approx(memory(gated * 4)).epsilon(1e-9));
  CHECK(mlp_e.times.bwd - mlp_f.times.bwd == Approx(memory(gated * 6)).epsilon(1e-9));
  CHECK(mlp_e.times.wgrad == mlp_f.times.wgrad);
  // The GEMMs and the attention kernel are the same ops either way.
  CHECK(op_of(e, LayerOpKind::attention_core).times.fwd == op_of(f, LayerOpKind::attention_core).times.fwd);
  // Under a compiled block the eager key changes nothing.
  const Scenario compiled = llama({"plan.activations.compiled_blocks=true"});
  const Scenario compiled_fused = llama({"plan.activations.compiled_blocks=true", "plan.kernels.pointwise=\"fused\""});
  const LayerOps c = layer_ops(compiled.arch, compiled.plan, costs, 0, kTokens, {});
  const LayerOps cf = layer_ops(compiled_fused.arch, compiled_fused.plan, costs, 0, kTokens, {});
  for (std::size_t i = 0; i < c.ops.size(); ++i) CHECK(c.ops[i].times.fwd == cf.ops[i].times.fwd);
  // Selective recompute runs the eager activation again.
  const Scenario sel = llama({"plan.activations.recompute=\"selective\""});
  const Scenario sel_fused = llama({"plan.activations.recompute=\"selective\"", "plan.kernels.pointwise=\"fused\""});
  const double redo = layer_ops(sel.arch, sel.plan, costs, 0, kTokens, {}).partial_recompute -
                      layer_ops(sel_fused.arch, sel_fused.plan, costs, 0, kTokens, {}).partial_recompute;
  CHECK(redo == Approx(memory(gated * 4)).epsilon(1e-9));
}

TEST_CASE("A non-gated MLP and ALiBi attention have no eager extra", "[unit]") {
  // MPT-7B: GELU MLP (one kernel either way), ALiBi (no RoPE).
  const std::string mpt = test::source_path("scenarios/gallery/mpt-7b.json");
  const Scenario e = load_scenario(mpt, {"plan.kernels.pointwise=\"eager\""});
  const Scenario f = load_scenario(mpt, {"plan.kernels.pointwise=\"fused\""});
  REQUIRE(e.plan.eager_pointwise());
  const ProfileCostBook costs(e.hardware, e.cost_models);
  const LayerOps le = layer_ops(e.arch, e.plan, costs, 0, kTokens, {});
  const LayerOps lf = layer_ops(f.arch, f.plan, costs, 0, kTokens, {});
  REQUIRE(le.ops.size() == lf.ops.size());
  for (std::size_t i = 0; i < le.ops.size(); ++i) {
    INFO(name_of(le.ops[i].kind));
    CHECK(le.ops[i].times.fwd == lf.ops[i].times.fwd);
    CHECK(le.ops[i].times.bwd == lf.ops[i].times.bwd);
  }
}

TEST_CASE("The eager gated activation keeps silu's output for the product's backward", "[unit]") {
  const Scenario eager = llama({});
  const Scenario fused = llama({"plan.kernels.pointwise=\"fused\""});
  const BlockActivations e = saved_per_token(eager.arch, 0, eager.plan, {});
  const BlockActivations f = saved_per_token(fused.arch, 0, fused.plan, {});
  CHECK(e.attention == f.attention);
  CHECK(e.mlp - f.mlp == Approx(2.0 * 14336));  // one BF16 activation of the SwiGLU width
  // Selective recompute (the activation redone in backward) and op-level checkpointing keep none.
  for (const char* policy : {"\"selective\"", "\"selective_op\""}) {
    INFO(policy);
    const std::string set = std::string("plan.activations.recompute=") + policy;
    const Scenario re = llama({set}), rf = llama({set, "plan.kernels.pointwise=\"fused\""});
    CHECK(saved_per_token(re.arch, 0, re.plan, {}).total() == saved_per_token(rf.arch, 0, rf.plan, {}).total());
  }
}
