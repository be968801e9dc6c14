// torchtitan (pytorch/torchtitan) with its job config's defaults: eager model and loss unless
// compile.enable is set, FSDP2 over dp_shard, fused AdamW, torchao float8 / MX converters.
#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> torchtitan_stack() {
  return std::make_unique<StackPreset>(
      "torchtitan",
      "torchtitan: eager cross-entropy on FP32 logits (compile off by default), fused AdamW, torchao low precision",
      "pytorch/torchtitan main",
      std::vector<StackValue>{
          {"activations.loss", "\"standard\"",
           "torchtitan/components/loss.py cross_entropy_loss (pred.float()); config/job_config.py Compile.enable "
           "False (with compile.enable and the \"loss\" component set activations.loss to \"compiled\")"},
          {"activations.compiled_blocks", "false",
           "torchtitan/config/job_config.py Compile.enable False (with compile.enable and the \"model\" component "
           "each TransformerBlock is compiled: set it true)"},
          {"kernels.pointwise", "\"eager\"",
           "torchtitan/models/common/rope.py ComplexRoPE.apply_rotary_emb (query.float(), the complex multiply, "
           "type_as) and models/common/feed_forward.py FeedForward.forward (F.silu(self.w1(x)) * self.w3(x)) run as "
           "separate PyTorch kernels in the eager model (a compiled block fuses them)"},
          {"kernels.expert_probs", "\"combine_fp32\"",
           "torchtitan/models/common/token_dispatcher.py combine: (routed_output.to(torch.float32) * "
           "topk_scores_experts_sorted).to(dtype), then deterministic_scatter_add (its DeepEP / HybridEP "
           "dispatchers, distributed/deepep/deepep.py, multiply in the compute dtype: set \"combine\" with them)"},
          {"optimizer.implementation", "\"fused\"", "torchtitan/config/job_config.py Optimizer.implementation"},
          {"fsdp.reshard_after_forward_policy", "\"default\"",
           "torchtitan/config/configs.py ParallelismConfig.fsdp_reshard_after_forward \"default\" -> "
           "distributed/fsdp.py "
           "get_fsdp_reshard_after_forward_policy: reshard unless pipeline parallelism is on",
           "fsdp"},
          {"expert_parallel.transport", "\"nccl_all_to_all\"",
           "torchtitan/models/deepseek_v3/__init__.py moe_comm_backend \"standard\" -> "
           "models/common/config_utils.py make_token_dispatcher_config: AllToAllTokenDispatcher "
           "(models/common/token_dispatcher.py all_to_all_single); \"deepep\" and \"hybridep\" are opt-in"},
          {"routing.dropless", "true",
           "torchtitan/models/common/moe.py: top-k token-choice routing with no expert capacity, no token dropped"},
          {"precision.library", "\"torchao\"",
           "torchtitan/components/quantization/float8.py, mx.py (torchao Float8Linear, MXLinear)"},
          {"allocator.expandable_segments", "true",
           "run_train.sh launches torchrun with PYTORCH_ALLOC_CONF=\"expandable_segments:True\" (the caching "
           "allocator maps segments that grow instead of fixed blocks)"},
      });
}

}  // namespace moesim
