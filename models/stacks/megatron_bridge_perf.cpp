// Megatron-Bridge's performance recipes (src/megatron/bridge/perf_recipes/, the configurations
// NVIDIA benchmarks publish): Megatron-Bridge's values with _benchmark_common's benchmark-mode
// switches, of which two change what moesim models: the DDP gradient buffer and its
// reduce-scatter stay in BF16 (grad_reduce_in_fp32 False; Megatron-Bridge's own recipes keep FP32),
// and the fused cross-entropy runs Transformer Engine's kernel (cross_entropy_fusion_impl "te");
// and the process environment most recipes set, of which the allocator's expandable segments.
#include <algorithm>

#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> megatron_bridge_perf_stack() {
  std::vector<StackValue> values = megatron_bridge_stack()->values();
  values.push_back({"precision.grad_accum_dtype", "\"bf16\"",
                    "src/megatron/bridge/perf_recipes/_common.py _benchmark_common: cfg.ddp.grad_reduce_in_fp32 = "
                    "False (and _perf_precision's mixed-precision config): Megatron-Core's "
                    "distributed/param_and_grad_buffer.py then keeps the gradient buffer in the parameters' BF16, "
                    "accumulated and reduce-scattered in BF16 (training/mixed_precision.py's default is True)",
                    "ddp"});
  // _benchmark_common(cfg, cross_entropy_impl="te") sets the fused cross-entropy's implementation
  // (the preset's cross_entropy_loss_fusion stays on).
  const StackValue loss{
      "activations.loss", "\"te\"",
      "src/megatron/bridge/perf_recipes/_common.py _benchmark_common(cfg, cross_entropy_impl=\"te\"): "
      "cfg.model.cross_entropy_fusion_impl = cross_entropy_impl (Megatron-Core "
      "fusions/fused_cross_entropy.py -> Transformer Engine's Triton cross-entropy)"};
  std::replace_if(
      values.begin(), values.end(), [](const StackValue& v) { return v.path == "activations.loss"; }, loss);
  values.push_back({"allocator.expandable_segments", "true",
                    "the recipes' env_vars set PYTORCH_CUDA_ALLOC_CONF=\"expandable_segments:True\" (every H100 "
                    "Llama 3 and DeepSeek-V3 recipe, most of the others: e.g. perf_recipes/llama/h100/llama3.py, "
                    "deepseek/gb200/deepseek_v3.py); a recipe without it runs the default allocator: set it false"});
  return std::make_unique<StackPreset>(
      "megatron-bridge-perf",
      "Megatron-Bridge's performance recipes: Megatron-Bridge's values with Transformer Engine's cross-entropy, BF16 "
      "gradient buffers and reduce-scatter (grad_reduce_in_fp32 False) and expandable allocator segments",
      "NVIDIA-NeMo/Megatron-Bridge main (067f987df0) src/megatron/bridge/perf_recipes over NVIDIA/Megatron-LM main "
      "(d98e8a64dd)",
      std::move(values));
}

}  // namespace moesim
