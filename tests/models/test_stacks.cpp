// Training-stack presets (models/stacks/): a plan naming a stack takes the stack's values under
// the keys it leaves unset, its own keys win, a value tied to a design reaches only that design,
// and every preset's values parse on every design.
#include <catch2/catch.hpp>

#include <algorithm>

#include "models/arch/inventory.hpp"
#include "models/input/scenario.hpp"
#include "models/stacks/stack_preset.hpp"
#include "reports/stack_report.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kDense = "scenarios/fig8/dense-ddp.json";

// The Figure 8 dense scenario under `stack`, the plan's own loss, gradient-sync and optimizer
// keys removed (`sets` come after, so a test can put one back).
Scenario under(const std::string& stack, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"plan.stack=\"" + stack + "\"", "plan.activations={\"recompute\": \"none\"}",
                                   "plan.ddp={\"distributed_optimizer\": true}",
                                   "plan.optimizer={\"type\": \"adamw\"}"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_scenario(test::source_path(kDense), sets);
}

bool took(const Scenario& s, const std::string& path) {
  return std::any_of(s.stack.taken.begin(), s.stack.taken.end(), [&](const StackSetting& t) { return t.path == path; });
}
}  // namespace

TEST_CASE("a plan naming a stack takes the stack's values where it sets none", "[unit][stacks]") {
  const Scenario megatron = under("megatron-core");
  CHECK(megatron.stack.code.find("Megatron-LM") != std::string::npos);
  CHECK(megatron.stack.name == "megatron-core");
  CHECK(megatron.plan.loss == LossImpl::vocab_parallel);
  CHECK(megatron.plan.grad_sync == GradSync::reduce_scatter);
  CHECK(megatron.plan.optimizer.layout == ShardLayout::concat_then_shard);
  CHECK(megatron.plan.optimizer.rebuild == WeightRebuild::in_place);
  CHECK(megatron.plan.optimizer.kernels == OptimizerKernels::fused);
  CHECK(megatron.plan.precision.library == LowPrecisionLibrary::transformer_engine);
  CHECK(took(megatron, "activations.loss"));
  const Scenario olmo = under("olmo-core");
  CHECK(olmo.plan.loss == LossImpl::compiled);
  CHECK(olmo.plan.compiled_blocks);
  CHECK_FALSE(under("torchtitan").plan.compiled_blocks);
  CHECK(olmo.plan.optimizer.kernels == OptimizerKernels::olmo_core_foreach);
  CHECK(under("torchtitan").plan.loss == LossImpl::standard);
  CHECK(under("torchtitan").plan.optimizer.kernels == OptimizerKernels::fused);
  CHECK(under("composer").plan.loss == LossImpl::flash_attn);
}

TEST_CASE("composer reduces FSDP gradients in BF16 (llm-foundry's mixed_precision PURE), not DDP's", "[unit][stacks]") {
  // The Figure 8 dense scenario's plan sets reduce_dtype itself: removed so the stack's value shows.
  const std::vector<std::string> fsdp = {"design=fsdp", "plan.precision={\"compute_dtype\": \"bf16\"}"};
  const Scenario s = under("composer", fsdp);
  CHECK(s.plan.precision.reduce == DType::bf16);
  CHECK(took(s, "precision.reduce_dtype"));
  const Scenario ddp = under("composer", {"plan.precision={\"compute_dtype\": \"bf16\"}"});
  CHECK(ddp.plan.precision.reduce == DType::fp32);
  CHECK_FALSE(took(ddp, "precision.reduce_dtype"));
  // A plan's own reduce dtype wins.
  std::vector<std::string> own = fsdp;
  own.push_back("plan.precision.reduce_dtype=\"fp32\"");
  CHECK(under("composer", own).plan.precision.reduce == DType::fp32);
}

TEST_CASE("megatron-bridge is Megatron-Core with the fused vocab-parallel loss its GPT provider turns on",
          "[unit][stacks]") {
  const StackPreset& core = stack_presets().get("megatron-core");
  const StackPreset& bridge = stack_presets().get("megatron-bridge");
  REQUIRE(bridge.values().size() == core.values().size());
  for (std::size_t i = 0; i < core.values().size(); ++i) {
    const StackValue &c = core.values()[i], &b = bridge.values()[i];
    CHECK(b.path == c.path);
    if (c.path == "activations.loss") {
      CHECK(b.value == "\"vocab_parallel_fused\"");
      CHECK(b.source.find("gpt_provider.py") != std::string_view::npos);
    } else {
      CHECK(b.value == c.value);
    }
  }
  CHECK(under("megatron-bridge").plan.loss == LossImpl::vocab_parallel_fused);
}

TEST_CASE("the plan's own keys win over its stack's", "[unit][stacks]") {
  // The Figure 8 plans name Olmo-core's stack and keep the eager loss they were validated with.
  const Scenario fig8 = load_scenario(test::source_path(kDense), {});
  CHECK(fig8.stack.name == "olmo-core");
  CHECK(fig8.plan.loss == LossImpl::standard);
  CHECK_FALSE(took(fig8, "activations.loss"));
  CHECK_FALSE(took(fig8, "activations.compiled_blocks"));
  CHECK_FALSE(fig8.plan.compiled_blocks);
  CHECK(took(fig8, "optimizer.implementation"));
  const Scenario own = under("megatron-core", {"plan.ddp.grad_sync=\"all_reduce\""});
  CHECK(own.plan.grad_sync == GradSync::all_reduce);
  CHECK_FALSE(took(own, "ddp.grad_sync"));
  CHECK(took(own, "activations.loss"));
}

TEST_CASE("a stack value tied to a design reaches only that design", "[unit][stacks]") {
  const Scenario fsdp = under("megatron-core", {"design=\"fsdp\""});
  CHECK_FALSE(took(fsdp, "ddp.grad_sync"));
  CHECK_FALSE(took(fsdp, "optimizer.layout"));
  CHECK(took(fsdp, "activations.loss"));
  // Olmo-core's hand-written foreach AdamW is its DDP optimizer's; under FSDP2 it steps torch's.
  const Scenario olmo_fsdp = under("olmo-core", {"design=\"fsdp\""});
  CHECK_FALSE(took(olmo_fsdp, "optimizer.implementation"));
  CHECK(olmo_fsdp.plan.optimizer.kernels == OptimizerKernels::foreach);
}

TEST_CASE("every preset's values parse on every design, each with a source", "[unit][stacks]") {
  for (const auto& name : stack_presets().names()) {
    const StackPreset& stack = stack_presets().get(name);
    CHECK_FALSE(stack.code().empty());
    for (const StackValue& v : stack.values()) {
      INFO(name << " " << v.path);
      CHECK(v.source.size() > 20);
      CHECK_NOTHROW(nlohmann::json::parse(v.value));
    }
    for (const char* design : {"ddp", "fsdp", "zero2"}) {
      INFO(name << " on " << design);
      CHECK_NOTHROW(under(name, {std::string("design=\"") + design + "\""}));
    }
  }
}

TEST_CASE("an unknown stack names plan.stack and the presets", "[unit][stacks]") {
  CHECK_THROWS_WITH(load_scenario(test::source_path(kDense), {"plan.stack=\"megatron\""}),
                    Catch::Contains("plan.stack") && Catch::Contains("megatron-core") && Catch::Contains("torchtitan"));
}

TEST_CASE("the report names the stack and every value taken from it", "[unit][stacks]") {
  const Scenario s = under("megatron-core");
  const std::string line = stack_line(s.stack);
  CHECK(line.rfind("stack    megatron-core (NVIDIA/Megatron-LM", 0) == 0);
  CHECK(line.find("activations.loss=vocab_parallel") != std::string::npos);
  CHECK(line.find("ddp.grad_sync=reduce_scatter") != std::string::npos);
  const nlohmann::json j = stack_json(s.stack);
  CHECK(j["taken"].size() == s.stack.taken.size());
  CHECK(j["taken"][0]["source"].get<std::string>().find("megatron/core") != std::string::npos);
  CHECK(stack_line(load_scenario(test::source_path("scenarios/fig8/fig8a.json"), {}).stack).find("olmo-core") !=
        std::string::npos);
  CHECK(stacks_table().find("plan.activations.loss = flash_attn") != std::string::npos);
}

TEST_CASE("torchtitan reshards FSDP units after forward unless the plan has a pipeline", "[unit][stacks]") {
  // get_fsdp_reshard_after_forward_policy("default", pp_enabled) = not pp_enabled.
  const auto fsdp = [](const std::vector<std::string>& extra) {
    std::vector<std::string> sets = {"design=fsdp", "plan.batch.global_batch_tokens=262144"};
    sets.insert(sets.end(), extra.begin(), extra.end());
    return under("torchtitan", sets);
  };
  CHECK(fsdp({}).plan.fsdp_reshard_after_forward);
  const Scenario piped = fsdp({"design=fsdp+pp2"});
  CHECK_FALSE(piped.plan.fsdp_reshard_after_forward);
  CHECK(took(piped, "fsdp.reshard_after_forward_policy"));
  // The plan's own flag wins over the policy; the policy's other values.
  CHECK(fsdp({"design=fsdp+pp2", "plan.fsdp.reshard_after_forward=true"}).plan.fsdp_reshard_after_forward);
  CHECK_FALSE(fsdp({"plan.fsdp.reshard_after_forward_policy=\"never\""}).plan.fsdp_reshard_after_forward);
  CHECK(fsdp({"design=fsdp+pp2", "plan.fsdp.reshard_after_forward_policy=\"always\""}).plan.fsdp_reshard_after_forward);
  CHECK_THROWS_WITH(fsdp({"plan.fsdp.reshard_after_forward_policy=\"sometimes\""}),
                    Catch::Contains("plan.fsdp.reshard_after_forward_policy") && Catch::Contains("default"));
  // A DDP plan takes nothing of it.
  CHECK_FALSE(took(under("torchtitan"), "fsdp.reshard_after_forward_policy"));
}

TEST_CASE(
    "megatron-bridge-perf is Megatron-Bridge with the BF16 gradient buffers and TE cross-entropy its benchmark "
    "recipes set",
    "[unit][stacks]") {
  const StackPreset& bridge = stack_presets().get("megatron-bridge");
  const StackPreset& perf = stack_presets().get("megatron-bridge-perf");
  REQUIRE(perf.values().size() == bridge.values().size() + 2);
  for (std::size_t i = 0; i < bridge.values().size(); ++i) {
    CHECK(perf.values()[i].path == bridge.values()[i].path);
    if (perf.values()[i].path == "activations.loss") {
      // _benchmark_common(cfg, cross_entropy_impl="te"): Transformer Engine's Triton kernel.
      CHECK(perf.values()[i].value == "\"te\"");
      CHECK(perf.values()[i].source.find("cross_entropy_impl") != std::string_view::npos);
    } else {
      CHECK(perf.values()[i].value == bridge.values()[i].value);
    }
  }
  CHECK(under("megatron-bridge-perf", {}).plan.loss == LossImpl::te);
  // The recipes' process environment: expandable allocator segments.
  const StackValue& allocator = perf.values().back();
  CHECK(allocator.path == "allocator.expandable_segments");
  CHECK(allocator.value == "true");
  CHECK(allocator.source.find("PYTORCH_CUDA_ALLOC_CONF") != std::string_view::npos);
  CHECK(under("megatron-bridge-perf", {}).plan.allocator.expandable_segments);
  const StackValue& grads = perf.values()[bridge.values().size()];
  CHECK(grads.path == "precision.grad_accum_dtype");
  CHECK(grads.value == "\"bf16\"");
  CHECK(grads.source.find("_benchmark_common") != std::string_view::npos);
  // A DDP plan under it keeps BF16 gradient buckets: half the FP32 bytes.
  const std::vector<std::string> own_precision_removed{"plan.precision={\"compute_dtype\": \"bf16\"}"};
  const Scenario fp32 = under("megatron-bridge", own_precision_removed);
  const Scenario bf16 = under("megatron-bridge-perf", own_precision_removed);
  CHECK(fp32.plan.precision.grad_accum == DType::fp32);
  CHECK(bf16.plan.precision.grad_accum == DType::bf16);
  CHECK(took(bf16, "precision.grad_accum_dtype"));
  const auto grad_bytes = [](const Scenario& s) {
    const MemoryLedger ledger = scenario_ledger(s, build_inventory(s.arch));
    double bytes = 0;
    for (const auto& item : ledger.stages[0].persistent)
      if (item.cls == MemClass::grad_buffers) bytes += item.bytes;
    return bytes;
  };
  CHECK(grad_bytes(bf16) == Approx(grad_bytes(fp32) / 2));
}
