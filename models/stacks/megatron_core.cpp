// Megatron-Core (NVIDIA/Megatron-LM megatron/core) with its defaults: the distributed optimizer
// over contiguous gradient and parameter buffers, Transformer Engine layers, the unfused
// vocab-parallel cross-entropy; the gradient reduction and the parameter all-gather overlapped
// with compute as its README's communication optimizations run them (the command-line flags are
// off unless passed: a run without them sets plan.ddp.overlap_* false).
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
          {"kernels.pointwise", "\"fused\"",
           "megatron/training/arguments.py --no-rope-fusion, --no-bias-swiglu-fusion (both fusions on unless passed): "
           "transformer/mlp.py bias_swiglu_impl (fusions/fused_bias_swiglu.py, one jit-fused kernel each way) and "
           "apply_rope_fusion (Transformer Engine's fused RoPE)"},
          {"kernels.expert_probs", "\"activation\"",
           "megatron/core/transformer/moe/experts.py TEGroupedMLP.forward: the router probabilities scale the "
           "activation output (bias_act_func: weighted_bias_swiglu_impl, weighted_squared_relu_impl); "
           "token_dispatcher.py combine_postprocess unpermute and the HybridEP / DeepEP combine take no "
           "probabilities"},
          {"ddp.grad_sync", "\"reduce_scatter\"",
           "megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBucketGroup.start_grad_sync: "
           "reduce_scatter_tensor when use_distributed_optimizer",
           "ddp"},
          {"ddp.overlap_grad_reduce", "true",
           "README.md 'Communication optimizations' and docs/user-guide/parallelism-guide.md run "
           "--overlap-grad-reduce: megatron/core/distributed/distributed_data_parallel.py _make_backward_post_hook -> "
           "register_grad_ready starts each bucket group's reduce-scatter once full (the flag's default, "
           "training/arguments.py, is off)",
           "ddp"},
          {"ddp.overlap_param_gather", "true",
           "README.md 'Communication optimizations' runs --overlap-param-gather: distributed_data_parallel.py "
           "_make_forward_pre_hook -> param_and_grad_buffer.py finish_param_sync waits for a bucket group's "
           "all-gather and dispatches the next (the flag's default, training/arguments.py, is off)",
           "ddp"},
          {"ddp.grad_accumulation_fusion", "true",
           "megatron/training/arguments.py --no-gradient-accumulation-fusion (on unless passed) -> "
           "extensions/transformer_engine.py TELinear fuse_wgrad_accumulation: the wgrad GEMM accumulates into "
           "main_grad",
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
          {"expert_parallel.transport", "\"nccl_all_to_all\"",
           "megatron/core/transformer/moe/README.md 'Token Dispatching': --moe-token-dispatcher-type alltoall for EP > "
           "1 "
           "(token_dispatcher.py MoEAlltoAllTokenDispatcher, NCCL all-to-all between permute and unpermute); "
           "transformer_config.py's default, allgather, is the README's choice for TP-only or small-EP runs: "
           "expert_parallel.transport \"nccl_all_gather\""},
          {"routing.dropless", "true",
           "megatron/core/transformer/transformer_config.py moe_expert_capacity_factor None: 'no token will be "
           "dropped'"},
          {"precision.library", "\"transformer_engine\"",
           "megatron/core/extensions/transformer_engine.py TELinear, TELayerNormColumnParallelLinear, TEGroupedLinear"},
      });
}

}  // namespace moesim
