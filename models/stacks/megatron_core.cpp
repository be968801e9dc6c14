// Megatron-Core (NVIDIA/Megatron-LM megatron/core) with its defaults: the distributed optimizer
// over contiguous gradient and parameter buffers, Transformer Engine layers, the unfused
// vocab-parallel cross-entropy.
#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> megatron_core_stack() {
  return std::make_unique<StackPreset>(
      "megatron-core",
      "Megatron-Core: vocab-parallel cross-entropy, reduce-scattered gradients into distributed-optimizer shards of "
      "one contiguous buffer, fused Adam, Transformer Engine linears",
      "NVIDIA/Megatron-LM main (d98e8a64dd)",
      std::vector<StackValue>{
          {"activations.loss", "\"vocab_parallel\"",
           "megatron/core/models/common/language_module/language_module.py compute_language_model_loss -> "
           "tensor_parallel/cross_entropy.py vocab_parallel_cross_entropy (model_parallel_config.py "
           "cross_entropy_loss_fusion=False)"},
          {"activations.compiled_blocks", "false",
           "megatron/core/transformer/transformer_layer.py: layers run Transformer Engine and jit_fuser kernels, "
           "never torch.compile of the layer"},
          {"ddp.grad_sync", "\"reduce_scatter\"",
           "megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBucketGroup.start_grad_sync: "
           "reduce_scatter_tensor when use_distributed_optimizer",
           "ddp"},
          {"optimizer.layout", "\"concat_then_shard\"",
           "megatron/core/optimizer/distrib_optimizer.py _build_model_gbuf_range: shards of the contiguous grad "
           "buffer, parameters split across them",
           "ddp"},
          {"optimizer.weight_rebuild", "\"in_place\"",
           "megatron/core/distributed/param_and_grad_buffer.py start_param_sync: all_gather_into_tensor into the "
           "parameter buffer",
           "ddp"},
          {"optimizer.implementation", "\"fused\"",
           "megatron/core/optimizer/__init__.py _get_megatron_optimizer_based_on_param_groups: TE / apex FusedAdam"},
          {"precision.library", "\"transformer_engine\"",
           "megatron/core/extensions/transformer_engine.py TELinear, TELayerNormColumnParallelLinear, TEGroupedLinear"},
      });
}

}  // namespace moesim
