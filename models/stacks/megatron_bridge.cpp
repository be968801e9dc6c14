// Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge): NeMo's recipes and model providers over
// Megatron-Core, so every Megatron-Core value holds except where its providers change a default.
// GPTModelProvider turns cross_entropy_loss_fusion on (Megatron-Core leaves it off), with
// Megatron-Core's default cross_entropy_fusion_impl "native" (model_parallel_config.py): the
// jit-fused vocab-parallel cross-entropy. Its recipes' DDP config (recipes/common.py
// _pretrain_common) sets overlap_grad_reduce and overlap_param_gather, as the Megatron-Core preset
// does.
#include <algorithm>

#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> megatron_bridge_stack() {
  std::vector<StackValue> values = megatron_core_stack()->values();
  const StackValue loss{"activations.loss", "\"vocab_parallel_fused\"",
                        "src/megatron/bridge/models/gpt_provider.py GPTModelProvider cross_entropy_loss_fusion=True "
                        "(Megatron-Core model_parallel_config.py cross_entropy_fusion_impl default \"native\": "
                        "fusions/fused_cross_entropy.py fused_vocab_parallel_cross_entropy)"};
  std::replace_if(
      values.begin(), values.end(), [](const StackValue& v) { return v.path == "activations.loss"; }, loss);
  // The same overlaps, set by its recipes rather than passed as Megatron-LM flags; the all-to-all
  // dispatcher set by its MoE model bridges.
  for (StackValue& v : values) {
    if (v.path == "expert_parallel.transport") {
      v.source =
          "src/megatron/bridge/models/*: the MoE bridges and providers set moe_token_dispatcher_type \"alltoall\" "
          "(qwen/qwen3_moe_bridge.py, deepseek/deepseek_v3_bridge.py, olmoe/olmoe_provider.py, "
          "gpt_oss/gpt_oss_bridge.py; a few newer ones \"flex\", DeepEP: expert_parallel.transport \"deepep\")";
    }
    if (v.path == "kernels.pointwise") {
      v.source =
          "src/megatron/bridge/models/llama/llama_bridge.py (and the other model bridges): "
          "bias_activation_fusion=True, "
          "apply_rope_fusion=True (Megatron-Core's fused bias-SwiGLU and RoPE)";
    }
    if (v.path == "ddp.overlap_grad_reduce" || v.path == "ddp.overlap_param_gather") {
      v.source =
          "src/megatron/bridge/recipes/common.py _pretrain_common: DistributedDataParallelConfig("
          "overlap_grad_reduce=True, overlap_param_gather=True, use_distributed_optimizer=True)";
    }
  }
  return std::make_unique<StackPreset>(
      "megatron-bridge",
      "Megatron-Bridge (NeMo) over Megatron-Core: Megatron-Core's values with the fused vocab-parallel cross-entropy "
      "its GPT provider turns on",
      "NVIDIA-NeMo/Megatron-Bridge main (067f987df0) over NVIDIA/Megatron-LM main (d98e8a64dd)", std::move(values));
}

}  // namespace moesim
