// Megatron-Core's selective recompute modules (plan.activations.recompute_modules): what each
// discards per token (models/memory/activations.cpp) and runs again before its backward
// (models/costs/layer_ops.cpp), the larger part rebuilt at once, and the inputs refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/costs/layer_ops.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/memory/activations.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Contains;

namespace {
const std::string kDeepSeek = "scenarios/gallery/deepseek-v3.json";  // MLA + MoE, EP 8
const std::string kLlama = "scenarios/gallery/llama3-8b.json";       // GQA + dense SwiGLU
constexpr double kTokens = 4096;
const std::string kSelectiveSet = "plan.activations.recompute=\"selective\"";
const std::string kNoneSet = "plan.activations.recompute=\"none\"";
const std::string kModulesKey = "plan.activations.recompute_modules=";

Scenario with(const std::string& file, const std::string& modules, std::vector<std::string> sets = {}) {
  sets.push_back(kSelectiveSet);
  sets.push_back(kModulesKey + modules);
  return load_scenario(test::source_path(file), sets);
}
Scenario none(const std::string& file, std::vector<std::string> sets = {}) {
  sets.push_back(kNoneSet);
  return load_scenario(test::source_path(file), sets);
}
std::int64_t first_layer(const Architecture& a, bool moe) {
  std::int64_t l = 0;
  while (a.is_moe_layer(l) != moe) ++l;
  return l;
}
RoutedRows rows_of(const Scenario& s) { return routed_rows_per_token(s.arch, s.plan, 1.0); }
BlockActivations saved(const Scenario& s, std::int64_t layer) {
  return saved_per_token(s.arch, layer, s.plan, rows_of(s));
}
InputError load_error(const std::string& file, const std::vector<std::string>& sets) {
  return test::load_error(test::source_path(file), sets);
}
}  // namespace

TEST_CASE("MLA's up projections and its norm, recomputed, leave q, k, v and the norm output unsaved", "[unit]") {
  const Scenario base = none(kDeepSeek);
  const std::int64_t layer = first_layer(base.arch, true);
  const TpWidths w = tp_widths(base.arch, base.plan);
  const double e = 2;  // BF16
  const BlockActivations kept = saved(base, layer);
  const BlockActivations up = saved(with(kDeepSeek, "[\"mla_up_proj\"]"), layer);
  CHECK(kept.attention - up.attention == Approx(e * (w.q + w.kv + w.v)));
  CHECK(up.mlp == kept.mlp);
  // layernorm: MLA's input norm and the MoE layer's pre-MLP norm are modules of their own.
  const BlockActivations norms = saved(with(kDeepSeek, "[\"layernorm\"]"), layer);
  CHECK(kept.attention - norms.attention == Approx(e * dbl(base.arch.d_model)));
  CHECK(kept.mlp - norms.mlp == Approx(e * dbl(base.arch.d_model)));
  // moe_act: the routed experts' activation output (the fc2 input), per routed row.
  const BlockActivations act = saved(with(kDeepSeek, "[\"moe_act\"]"), layer);
  CHECK(kept.mlp - act.mlp == Approx(e * rows_of(base).computed * dbl(base.arch.moe->expert_hidden)));
  // shared_experts: the shared MLP's up/gate output and product.
  const BlockActivations shared = saved(with(kDeepSeek, "[\"shared_experts\"]"), layer);
  const double hs = w.shared_hidden * dbl(base.arch.moe->shared_experts);
  CHECK(kept.mlp - shared.mlp == Approx(e * 3 * hs));
  // The module list is a set: two modules drop both parts.
  const BlockActivations both = saved(with(kDeepSeek, "[\"mla_up_proj\", \"moe_act\"]"), layer);
  CHECK(both.total() == Approx(kept.total() - (kept.attention - up.attention) - (kept.mlp - act.mlp)));
  // Without a list selective recompute stays Korthikanti et al.'s: every SwiGLU product.
  const Scenario legacy = load_scenario(test::source_path(kDeepSeek), {"plan.activations.recompute=\"selective\""});
  CHECK(saved(legacy, layer).attention == kept.attention);
  CHECK(saved(legacy, layer).mlp == Approx(kept.mlp - (kept.mlp - act.mlp) - e * hs));
}

TEST_CASE("An MoE layer recomputed whole keeps its input alone and its rebuild is held in its backward", "[unit]") {
  const std::vector<std::string> ep1{"plan.expert_parallel.degree=1"};
  const Scenario base = none(kDeepSeek, ep1);
  const std::int64_t layer = first_layer(base.arch, true);
  const Scenario moe = with(kDeepSeek, "[\"moe\"]", ep1);
  const double d = dbl(base.arch.d_model), e = 2;
  CHECK(saved(moe, layer).mlp == Approx(2 * e * d));  // the residual and the norm output (the checkpoint's input)
  // The rebuilt part alive at once: the larger of the two modules' drops.
  const double dropped = saved(base, layer).mlp - saved(moe, layer).mlp;
  CHECK(recomputed_per_token(moe.arch, layer, moe.plan, rows_of(moe)) == Approx(dropped));
  const Scenario both = with(kDeepSeek, "[\"moe\", \"mla_up_proj\"]", ep1);
  const double attention_drop = saved(base, layer).attention - saved(both, layer).attention;
  CHECK(attention_drop > 0);
  CHECK(recomputed_per_token(both.arch, layer, both.plan, rows_of(both)) == Approx(std::max(dropped, attention_drop)));
  // Korthikanti et al.'s selective recompute redoes its products one at a time: nothing held.
  const Scenario legacy = load_scenario(test::source_path(kDeepSeek), {"plan.activations.recompute=\"selective\""});
  CHECK(recomputed_per_token(legacy.arch, layer, legacy.plan, rows_of(legacy)) == 0);
}

TEST_CASE("A dense block's recompute modules: mlp keeps the MLP input, core_attn and layernorm save nothing",
          "[unit]") {
  const Scenario base = none(kLlama);
  const double d = dbl(base.arch.d_model), e = 2;
  CHECK(saved(with(kLlama, "[\"mlp\"]"), 0).mlp == Approx(e * d));
  CHECK(saved(with(kLlama, "[\"mlp\"]"), 0).attention == saved(base, 0).attention);
  // A GQA block's norms are fused into Transformer Engine's LayerNormLinear (Megatron-Core's
  // input_layernorm is an IdentityOp there), and a fused attention keeps q, k, v and its output
  // as the checkpoint's inputs and the out-projection's.
  CHECK(saved(with(kLlama, "[\"layernorm\", \"core_attn\"]"), 0).total() == saved(base, 0).total());
}

TEST_CASE("Each recompute module's forward runs again before its backward", "[unit]") {
  const Scenario base = none(kLlama, {"plan.kernels.pointwise=\"fused\""});
  const ProfileCostBook costs(base.hardware, base.cost_models);
  const auto ops = [&](const Scenario& s, std::int64_t layer, const std::vector<double>& rows = {}) {
    return layer_ops(s.arch, s.plan, costs, layer, kTokens, rows);
  };
  const LayerOps plain = ops(base, 0);
  CHECK(plain.partial_recompute == 0);
  // core_attn with a fused kernel: its forward again.
  const Scenario core = with(kLlama, "[\"core_attn\"]", {"plan.kernels.pointwise=\"fused\""});
  double attention_fwd = 0, mlp_fwd = 0;
  for (const auto& op : plain.ops) {
    if (op.kind == LayerOpKind::attention_core) attention_fwd = op.times.fwd;
    if (op.kind == LayerOpKind::dense_mlp) mlp_fwd = op.times.fwd;
  }
  CHECK(ops(core, 0).partial_recompute == Approx(attention_fwd));
  // mlp: the whole MLP op's forward (GEMMs, norm, activation; the residual add is not rerun).
  const Scenario mlp = with(kLlama, "[\"mlp\"]", {"plan.kernels.pointwise=\"fused\""});
  const double redo = ops(mlp, 0).partial_recompute;
  CHECK(redo > 0.9 * mlp_fwd);
  CHECK(redo <= mlp_fwd);
  // MLA + MoE: mla_up_proj and moe_act each add their part.
  const Scenario ds = none(kDeepSeek);
  const std::int64_t layer = first_layer(ds.arch, true);
  const ProfileCostBook ds_costs(ds.hardware, ds.cost_models);
  const std::vector<double> rows(static_cast<std::size_t>(ds.arch.moe->num_experts / ds.plan.ep),
                                 kTokens * dbl(ds.arch.moe->top_k) / dbl(ds.arch.moe->num_experts));
  const auto redo_of = [&](const std::string& modules) {
    const Scenario s = with(kDeepSeek, modules);
    return layer_ops(s.arch, s.plan, ds_costs, layer, kTokens, rows).partial_recompute;
  };
  const double up = redo_of("[\"mla_up_proj\"]"), act = redo_of("[\"moe_act\"]");
  CHECK(up > 0);
  CHECK(act > 0);
  CHECK(redo_of("[\"mla_up_proj\", \"moe_act\"]") == Approx(up + act));
}

TEST_CASE("Recompute modules are refused where Megatron-Core refuses them or moesim does not model them", "[unit]") {
  const InputError mode = load_error(kLlama, {"plan.activations.recompute_modules=[\"mlp\"]"});
  CHECK(mode.path() == "plan.activations.recompute_modules");
  CHECK_THAT(mode.message(), Contains("\"selective\""));
  const std::string selective = "plan.activations.recompute=\"selective\"";
  const InputError typo = load_error(kLlama, {selective, "plan.activations.recompute_modules=[\"mlp\", \"mla\"]"});
  CHECK(typo.path() == "plan.activations.recompute_modules[1]");
  CHECK_THAT(typo.message(), Contains("mla_up_proj"));
  CHECK(load_error(kLlama, {selective, "plan.activations.recompute_modules=[\"mlp\", \"mlp\"]"}).path() ==
        "plan.activations.recompute_modules[1]");
  CHECK(load_error(kLlama, {selective, "plan.activations.recompute_modules=[]"}).path() ==
        "plan.activations.recompute_modules");
  // Megatron-Core: "mla_up_proj in recompute_modules is only supported with multi_latent_attention".
  const InputError gqa = load_error(kLlama, {selective, "plan.activations.recompute_modules=[\"mla_up_proj\"]"});
  CHECK(gqa.path() == "plan.activations.recompute_modules");
  CHECK_THAT(gqa.message(), Contains("not MLA"));
  // The whole MoE layer again under EP would run its all-to-alls again: not modelled.
  const InputError ep = load_error(kDeepSeek, {selective, "plan.activations.recompute_modules=[\"moe\"]"});
  CHECK(ep.path() == "plan.activations.recompute_modules");
  CHECK_THAT(ep.message(), Contains("expert_parallel.degree 1"));
}

TEST_CASE("Recompute modules lower a DeepSeek-V3 stage's peak and lengthen its step", "[unit]") {
  const Scenario kept = none(kDeepSeek);
  const Scenario up = with(kDeepSeek, "[\"mla_up_proj\", \"moe_act\"]");
  const StepResult a = simulate(kept).result, b = simulate(up).result;
  const auto peak = [](const StepResult& r) { return r.ledger.stages[r.ledger.worst_stage].peak_allocated; };
  CHECK(peak(b) < peak(a));
  CHECK(b.step_time_s > a.step_time_s);
}

TEST_CASE("Full recompute of the first N layers of each model chunk (Megatron-Core's block method)", "[unit]") {
  const std::string full = "plan.activations.recompute=\"full\"";
  const std::string five = "plan.activations.recompute_num_layers=5";
  const Scenario kept = none(kLlama);
  const Scenario all = load_scenario(test::source_path(kLlama), {full});
  const Scenario block = load_scenario(test::source_path(kLlama), {full, five});
  for (std::int64_t layer : {0, 4}) {
    INFO(layer);
    CHECK(saved(block, layer).total() == saved(all, layer).total());
    CHECK(recomputed_per_token(block.arch, layer, block.plan, {}) ==
          recomputed_per_token(all.arch, layer, all.plan, {}));
  }
  for (std::int64_t layer : {5, 31}) {
    INFO(layer);
    CHECK(saved(block, layer).total() == saved(kept, layer).total());
    CHECK(recomputed_per_token(block.arch, layer, block.plan, {}) == 0);
  }
  // Each model chunk counts from its own first layer: 4 chunks of 8 layers under PP 2 x 2.
  const Scenario chunks =
      load_scenario(test::source_path(kLlama), {full, "plan.activations.recompute_num_layers=2", "design=fsdp+pp2+v2"});
  CHECK(whole_layer_recompute(chunks.plan, chunks.arch, 8));
  CHECK(whole_layer_recompute(chunks.plan, chunks.arch, 9));
  CHECK_FALSE(whole_layer_recompute(chunks.plan, chunks.arch, 10));
  CHECK(whole_layer_recompute(chunks.plan, chunks.arch, 24));
  // The step runs five layers' forwards again: between no recompute and every layer's.
  const double t_none = simulate(kept).result.step_time_s, t_all = simulate(all).result.step_time_s;
  const double t_block = simulate(block).result.step_time_s;
  CHECK(t_none < t_block);
  CHECK(t_block < t_none + 0.25 * (t_all - t_none));
  // Only with full recompute.
  const InputError e = load_error(kLlama, {five});
  CHECK(e.path() == "plan.activations.recompute_num_layers");
  CHECK_THAT(e.message(), Contains("\"full\""));
}
