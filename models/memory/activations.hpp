// Bytes a transformer block saves for backward, per token of one microbatch. Counting follows
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"),
// adapted to flash attention (no S^2 term: only q, k, v, output and the FP32 log-sum-exp),
// RMSNorm, SwiGLU and routed experts.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/costs/loss_paths.hpp"
#include "models/memory/routed_rows.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

// The formats saved activations are kept in: the compute dtype (BF16), FP32 (router logits and
// probabilities, the attention log-sum-exp), int64 expert indices, and the quantized copies an
// FP8 / MXFP8 linear keeps under Transformer Engine or an FP8 dispatch delivers.
enum class SavedFormat : std::uint8_t { compute, fp32, int64, fp8, mxfp8, mask };  // mask: dropout's, 1 byte
inline constexpr std::size_t kSavedFormats = static_cast<std::size_t>(SavedFormat::mask) + 1;  // the last one
using SavedSplit = std::array<double, kSavedFormats>;
// Its name in reports: the compute format by its dtype ("bf16").
std::string_view name_of(SavedFormat format, DType compute);

struct BlockActivations {
  double attention = 0;    // bytes per token
  double mlp = 0;          // dense MLP or MoE (router, routed and shared experts)
  SavedSplit by_format{};  // the same bytes per token by format
  double total() const { return attention + mlp; }
};

// What a block keeps on the GPU from its forward to its backward under plan.recompute (less what
// plan.activations.offload_modules moves to the host: offloaded_per_token): everything (none);
// a converted linear's input is kept as its library keeps it (plan.precision.library: torchao's
// BF16 input, Transformer Engine's quantized column-wise copy), FP8-dispatched rows as they
// arrive;
// all but the SwiGLU products (selective); the block input (full); under plan.compiled_blocks,
// the norm outputs that feed BF16-kept linears and the dense and shared-expert SwiGLU products
// are recomputed in the backward (an FP32 rstd per token and norm kept instead); or, for selective_op,
// torchtitan's op-level selective checkpointing of a dense block
// (torchtitan/distributed/activation_checkpoint.py, _apply_op_sac): the block input, the outputs of
// the flash-attention op (output and FP32 log-sum-exp) and of every odd-numbered aten.mm in the
// block's call order (its counter starts afresh in each block's forward; Llama's separate q, k, v
// projections then w1, w3, w2 make that q, v, w1 and w2); everything else is recomputed.
BlockActivations saved_per_token(const Architecture& arch, std::int64_t layer, const ParallelPlan& plan,
                                 const RoutedRows& rows);

// What plan.activations.offload_modules (offload_modules.hpp) moves to pinned host memory of
// what the block saves, per token: copied out during the block's forward and back before its
// backward, so saved_per_token leaves it out. A saved tensor under Megatron-Core's
// min_offloaded_tensor_size (1Mi elements at the plan's microbatch) stays on the GPU. Zero
// without offload modules.
BlockActivations offloaded_per_token(const Architecture& arch, std::int64_t layer, const ParallelPlan& plan,
                                     const RoutedRows& rows);

// What the block's backward rebuilds before it runs (full and selective_op recompute, Megatron-
// Core's selective modules: the larger part), per token, and what offloading brings back for it:
// alive with the saved part while the block's backward runs. Zero otherwise (selective recomputes
// its SwiGLU products one at a time).
double recomputed_per_token(const Architecture& arch, std::int64_t layer, const ParallelPlan& plan,
                            const RoutedRows& rows);

// Largest activation-gradient working set inside one block's backward, per token.
double backward_working_per_token(const Architecture& arch, std::int64_t layer, const ParallelPlan& plan,
                                  const RoutedRows& rows);

// Logits and loss buffers of the LM head per token under the plan's loss path (loss_paths.hpp).
LossBuffers loss_per_token(const Architecture& arch, const ParallelPlan& plan);

}  // namespace moesim
