// The pieces persistent training state is made of (seed Section 4.3, Figure 9), which each design
// (models/plan/designs/) combines: replicated compute weights and their low-precision caches,
// flat FP32 gradient buckets, main weights and optimizer states (sharded by the distributed
// optimizer's layout per replica group, or replicated), FSDP2's sharded parameters, gradients and
// states, and a ZeRO-2 style gradient shard.
#pragma once

#include <vector>

#include "models/memory/ledger.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

// BF16 compute weights of every rank-local parameter, and their low-precision caches if any.
void add_compute_weights(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                         std::vector<LedgerItem>& items);
// Flat gradient buckets over every rank-local parameter in the accumulation dtype.
void add_gradient_buckets(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                          std::vector<LedgerItem>& items);
// Main weights and optimizer states: sharded by the plan's layout within each tensor's replica
// group (`sharded`, the distributed optimizer), or replicated on every rank. Returns the elements
// the rank holds (its largest shard, or every local parameter).
double add_optimizer_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan, bool sharded,
                           std::vector<LedgerItem>& items, OptimizerShardReport& report);
// A gradient partition of `elements` in the accumulation dtype (ZeRO-2: the rank's shard).
void add_gradient_partition(double elements, const ParallelPlan& plan, std::vector<LedgerItem>& items);
// FSDP2 mixed precision: sharded main weights, sharded gradients in the same dtype, sharded states.
std::vector<LedgerItem> fsdp_sharded_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                           OptimizerShardReport& report);

}  // namespace moesim
