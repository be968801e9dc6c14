// torchtitan's op-level selective checkpointing of a dense block (plan.activations.recompute
// "selective_op"; torchtitan/distributed/activation_checkpoint.py, _apply_op_sac): what it keeps
// per token, which activations.hpp's saved_per_token answers for that policy.
#pragma once

#include "models/arch/architecture.hpp"
#include "models/memory/activations.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

// The block input, the flash-attention outputs and the outputs of the odd-numbered matmuls in
// call order (under TP the row-parallel w2 keeps its whole [T, d] partial sum); `e` bytes an
// activation element.
BlockActivations op_checkpointed(const Architecture& a, const ParallelPlan& plan, double e);

}  // namespace moesim
