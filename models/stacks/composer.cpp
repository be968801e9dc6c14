// Composer with llm-foundry's models (mosaicml/composer, mosaicml/llm-foundry): FSDP1 via
// Composer's parallelism config, flash-attn's fused cross-entropy, Transformer Engine for FP8.
#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> composer_stack() {
  return std::make_unique<StackPreset>(
      "composer",
      "Composer + llm-foundry: FlashAttention-2, flash-attn's Triton cross-entropy, Transformer Engine for FP8 "
      "(amp_fp8)",
      "mosaicml/llm-foundry main, mosaicml/composer main",
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
      });
}

}  // namespace moesim
