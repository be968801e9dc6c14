// Bytes a transformer block saves for backward, per token of one microbatch. Counting follows
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"),
// adapted to flash attention (no S^2 term: only q, k, v, output and the FP32 log-sum-exp),
// RMSNorm, SwiGLU and routed experts.
#pragma once

#include <cstdint>

#include "models/arch/architecture.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct BlockActivations {
  double attention = 0;  // bytes per token
  double mlp = 0;        // dense MLP or MoE (router, routed and shared experts)
  double total() const { return attention + mlp; }
};

// Saved for backward without recompute (or, for selective, with SwiGLU products recomputed).
BlockActivations saved_per_token(const Architecture& arch, std::int64_t layer, const ParallelPlan& plan);

// Largest activation-gradient working set inside one block's backward, per token.
double backward_working_per_token(const Architecture& arch, std::int64_t layer, const ParallelPlan& plan);

// Logits and loss buffers of the LM head per token: forward (saved) and the backward peak.
struct LossBuffers {
  double forward = 0;
  double backward = 0;
};
LossBuffers loss_per_token(const Architecture& arch, const ParallelPlan& plan);

}  // namespace moesim
