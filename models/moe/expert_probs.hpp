// Where an MoE layer multiplies its routed rows by their router probabilities
// (plan.kernels.expert_probs): the multiply's backward needs the probabilities' gradient, so the
// place decides what the layer keeps for it (models/memory/activations.cpp moe_terms).
//   combine       the combine multiplies each expert output row by its probability and keeps the
//                 expert output in the compute dtype (Olmo-core src/olmo_core/ops/moe.py ScatterOp:
//                 save_for_backward(..., x) when the weights need a gradient, as MegaBlocks' ops);
//   combine_fp32  the same on an FP32 upcast of the expert output (torchtitan
//                 torchtitan/models/common/token_dispatcher.py combine:
//                 routed_output.to(torch.float32) * scores), which the eager multiply keeps in FP32;
//                 inside a compiled block the upcast is a pointwise op Inductor recomputes, and the
//                 expert output is kept in the compute dtype;
//   activation    the expert MLP scales its activation output by the probabilities and the
//                 combine un-permutes without them (Megatron-Core moe/experts.py TEGroupedMLP:
//                 weighted_bias_swiglu_impl, weighted_squared_relu_impl; token_dispatcher.py
//                 unpermute and HybridEP/DeepEP combine take no probabilities): the fused weighted
//                 activation keeps only its input and the probabilities, where PyTorch's eager
//                 product (intermediate * permuted_probs) also keeps the activation output.
#pragma once

#include <cstdint>
#include <string_view>

#include "models/common/enum_names.hpp"

namespace moesim {

enum class ExpertProbs : std::uint8_t { combine, combine_fp32, activation };
inline constexpr EnumNames<ExpertProbs, 3> kExpertProbsNames{"expert probabilities",
                                                             {{{ExpertProbs::combine, "combine"},
                                                               {ExpertProbs::combine_fp32, "combine_fp32"},
                                                               {ExpertProbs::activation, "activation"}}}};
constexpr std::string_view name_of(ExpertProbs value) { return kExpertProbsNames.name(value); }

}  // namespace moesim
