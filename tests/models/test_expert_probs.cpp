// Where an MoE layer multiplies its routed rows by the router probabilities
// (plan.kernels.expert_probs, models/moe/expert_probs.hpp) and what that keeps for their gradient:
// the combine keeps the expert output (Olmo-core), the same upcast to FP32 outside a compiled
// block (torchtitan), Megatron-Core's weighted activation nothing more (PyTorch's eager product
// the activation output). Hand-computed on Qwen3-30B-A3B (d 2048, top-8 of 128 experts 768 wide).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "models/memory/activations.hpp"
#include "models/stacks/stack_preset.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kQwen = "scenarios/gallery/qwen3-30b-a3b.json";  // megatron-core, EP 8, 8 x B200
constexpr double kD = 2048, kTopK = 8, kHidden = 768, kBf16 = 2, kFp32 = 4;

Scenario qwen(const std::vector<std::string>& sets) {
  std::vector<std::string> all{"plan.activations.recompute=\"none\""};
  all.insert(all.end(), sets.begin(), sets.end());
  return load_scenario(test::source_path(kQwen), all);
}

// One MoE layer's saved bytes per token, routed rows as the even share (top-k per token).
BlockActivations saved(const Scenario& s) {
  const RoutedRows rows = routed_rows_per_token(s.arch, s.plan, 1.0);
  return saved_per_token(s.arch, 0, s.plan, rows);
}

std::string preset_value(std::string_view stack, std::string_view path) {
  const auto& values = stack_presets().get(stack).values();
  const auto it = std::find_if(values.begin(), values.end(), [&](const StackValue& v) { return v.path == path; });
  return it == values.end() ? std::string() : std::string(it->value);
}
}  // namespace

TEST_CASE("each stack multiplies the router probabilities where its code does", "[unit][stacks]") {
  CHECK(preset_value("olmo-core", "kernels.expert_probs") == "\"combine\"");
  CHECK(preset_value("torchtitan", "kernels.expert_probs") == "\"combine_fp32\"");
  for (const char* megatron : {"megatron-core", "megatron-bridge", "megatron-bridge-perf"}) {
    INFO(megatron);
    CHECK(preset_value(megatron, "kernels.expert_probs") == "\"activation\"");
  }
  // Without a stack or the key: the combine, as before the key existed.
  CHECK(qwen({"plan.stack=null"}).plan.expert_probs == ExpertProbs::combine);
  CHECK(qwen({}).plan.expert_probs == ExpertProbs::activation);
}

TEST_CASE("the probabilities' multiply keeps the expert output, its FP32 upcast, or nothing", "[unit]") {
  const double expert_output = kTopK * kD;  // elements a token, the routed rows' d-wide output
  const BlockActivations combine = saved(qwen({"plan.kernels.expert_probs=\"combine\""}));
  const BlockActivations upcast = saved(qwen({"plan.kernels.expert_probs=\"combine_fp32\""}));
  const BlockActivations weighted = saved(qwen({"plan.kernels.expert_probs=\"activation\""}));
  // 32 KiB a token a layer between the combine and Megatron-Core's weighted SwiGLU.
  CHECK(combine.mlp - weighted.mlp == Approx(kBf16 * expert_output).epsilon(1e-12));
  CHECK(upcast.mlp - weighted.mlp == Approx(kFp32 * expert_output).epsilon(1e-12));
  CHECK(combine.attention == weighted.attention);
  const auto fp32 = static_cast<std::size_t>(SavedFormat::fp32);
  CHECK(upcast.by_format[fp32] - weighted.by_format[fp32] == Approx(kFp32 * expert_output).epsilon(1e-12));
  // Inside a compiled block the upcast is recomputed: the expert output stays in BF16.
  const BlockActivations compiled =
      saved(qwen({"plan.kernels.expert_probs=\"combine_fp32\"", "plan.activations.compiled_blocks=true"}));
  const BlockActivations compiled_combine =
      saved(qwen({"plan.kernels.expert_probs=\"combine\"", "plan.activations.compiled_blocks=true"}));
  CHECK(compiled.mlp == Approx(compiled_combine.mlp).epsilon(1e-12));
  // PyTorch's eager product (intermediate * permuted_probs) keeps the activation output, 768 wide.
  const BlockActivations eager =
      saved(qwen({"plan.kernels.expert_probs=\"activation\"", "plan.kernels.pointwise=\"eager\""}));
  const BlockActivations eager_combine =
      saved(qwen({"plan.kernels.expert_probs=\"combine\"", "plan.kernels.pointwise=\"eager\""}));
  CHECK(eager_combine.mlp - eager.mlp == Approx(kBf16 * kTopK * (kD - kHidden)).epsilon(1e-12));
}

TEST_CASE("the step's saved activations shrink by the expert output under the weighted activation", "[unit]") {
  const Scenario combine = qwen({"plan.kernels.expert_probs=\"combine\""});
  const Scenario weighted = qwen({});
  const auto activations = [](const Scenario& s) {
    const auto r = test::run_ledger(s);
    const LedgerItem& item = r.ledger.stages.at(0).phases.front().items.front();
    REQUIRE(item.name == "saved activations");
    return item.bytes;
  };
  // 48 MoE layers x 4096 tokens x 32 KiB: 6 GiB.
  const double tokens = dbl(combine.arch.sequence_length) * dbl(combine.plan.microbatch_sequences);
  CHECK(activations(combine) - activations(weighted) == Approx(48 * tokens * kBf16 * kTopK * kD).epsilon(1e-9));
}

TEST_CASE("an unknown expert-probabilities place names the key and the allowed ones", "[unit]") {
  const InputError e = test::load_error(test::source_path(kQwen), {"plan.kernels.expert_probs=\"router\""});
  const std::string what = e.what();
  CHECK(what.find("plan.kernels.expert_probs") != std::string::npos);
  for (const char* allowed : {"combine", "combine_fp32", "activation"}) CHECK(what.find(allowed) != std::string::npos);
}
