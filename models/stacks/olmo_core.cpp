// Olmo-core (allenai/OLMo-core) as its training scripts run it (src/scripts/train/*: compile_model
// True, the default LM loss implementation, DDP with its distributed optimizer or FSDP2).
#include "models/stacks/stacks.hpp"

namespace moesim {

std::unique_ptr<StackPreset> olmo_core_stack() {
  return std::make_unique<StackPreset>(
      "olmo-core",
      "Olmo-core as its training scripts run it: the LM head and its eager loss compiled by Inductor, its foreach "
      "AdamW, torchao low precision",
      "allenai/OLMo-core main (fa6c5014c)",
      std::vector<StackValue>{
          {"activations.loss", "\"compiled\"",
           "src/olmo_core/nn/transformer/model.py Transformer.apply_compile (lm_head.compile) with the scripts' "
           "compile_model=True; nn/lm_head.py LMHead.forward, LMLossImplementation.default -> "
           "nn/functional/cross_entropy_loss.py cross_entropy_loss"},
          {"activations.compiled_blocks", "true",
           "src/olmo_core/nn/transformer/model.py Transformer.apply_compile: block.apply_compile() for every block "
           "(nn/transformer/block.py: self.compile(fullgraph=False)), with the scripts' compile_model=True"},
          {"kernels.expert_probs", "\"combine\"",
           "src/olmo_core/nn/moe/parallel_mlp.py: ops.scatter / ops.binned_scatter with the expert weights after "
           "the experts; ops/moe.py ScatterOp saves the expert output x when the weights need a gradient"},
          {"optimizer.implementation", "\"olmo_core_foreach\"",
           "src/olmo_core/optim/adamw.py foreach_adamw_step, the update of its DDP distributed optimizer (seed 4.4); "
           "under FSDP2 it steps torch.optim.AdamW (the fsdp design's default)",
           "ddp"},
          {"optimizer.weight_rebuild", "\"coalesced_copy\"",
           "OLMoDDPOptimizer._copy_main_params_to_model_params (seed 4.4.2)", "ddp"},
          {"precision.library", "\"torchao\"", "src/olmo_core/float8/__init__.py Float8Config (torchao Float8Linear)"},
      });
}

}  // namespace moesim
