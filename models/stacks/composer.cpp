// Composer with llm-foundry's models (mosaicml/composer, mosaicml/llm-foundry): FSDP1 via
// Composer's parallelism config (plan.fsdp.implementation "fsdp1"), flash-attn's fused
// cross-entropy, Transformer Engine for FP8.
#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> composer_stack() {
  return std::make_unique<StackPreset>(
      "composer",
      "Composer + llm-foundry: FlashAttention-2, flash-attn's Triton cross-entropy, Transformer Engine for FP8 "
      "(amp_fp8)",
      "mosaicml/llm-foundry main (8c8dd48f), mosaicml/composer main (64051888)",
      std::vector<StackValue>{
          {"activations.loss", "\"flash_attn\"",
           "llmfoundry/models/mpt/modeling_mpt.py ComposerMPTCausalLM: loss_fn default 'fused_crossentropy' -> "
           "flash_attn.losses.cross_entropy.CrossEntropyLoss"},
          {"kernels.attention", "\"flash_attn_2\"",
           "llmfoundry/models/layers/attention.py flash_attn_fn (flash_attn_interface.flash_attn_varlen_func with "
           "flash-attn 2.x installed) for attn_config.attn_impl 'flash', the default in "
           "llmfoundry/models/utils/config_defaults.py attn_config_defaults (04740270)"},
          {"activations.compiled_blocks", "false",
           "composer/trainer/trainer.py Trainer(compile_config=None): no torch.compile unless the run asks"},
          {"precision.library", "\"transformer_engine\"",
           "composer/core/precision.py get_precision_context: amp_fp8 runs te.fp8_autocast"},
          {"precision.reduce_dtype", "\"bf16\"",
           "llm-foundry's FSDP runs set fsdp_config.mixed_precision: PURE (scripts/train/yamls/pretrain/mpt-*.yaml; "
           "scripts/train/benchmarking/submit_benchmarks.py --fsdp_config_mixed_precision default 'PURE'); "
           "composer/distributed/mosaic_parallelism.py get_mixed_precision: PURE reduces gradients in the amp dtype "
           "(reduce_dtype = param_dtype = bf16)",
           "fsdp"},
          {"fsdp.implementation", "\"fsdp1\"",
           "composer/distributed/dist_strategy.py prepare_fsdp_module wraps with torch's FullyShardedDataParallel "
           "for an fsdp_config (composer/utils/parallelism.py FSDPConfig: FULL_SHARD, use_orig_params, "
           "limit_all_gathers True, backward_prefetch BACKWARD_POST, which gives the communicator torch's "
           "BACKWARD_PRE order, forward_prefetch False; 64051888)",
           "fsdp"},
      });
}

}  // namespace moesim
