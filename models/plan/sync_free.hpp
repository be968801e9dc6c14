// Megatron-Core's sync-free MoE path and its paged stash (docs/user-guide/features/paged_stash.md):
// what a plan needs for them (plan.expert_parallel.rank_capacity_factor,
// plan.activations.moe_paged_stash) and when a step runs twice under them. What they hold is
// models/memory/routed_rows.hpp's.
#pragma once

#include <cstdint>
#include <string>

#include "models/arch/architecture.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

// The first rule the plan breaks (its path under plan and why), or an empty path.
PlanRule sync_free_rule(const ParallelPlan& plan, const Architecture& arch);

// Whether the sync-free path reruns the step (megatron/core/transformer/moe/paged_stash.py,
// PagedStashRunner.__call__): the first try runs the forward-backward with HybridEP's static
// budget of rows per EP rank and the paged stash; when any rank received more rows in a layer
// than its budget (HybridEP drops them, check_over_budget) or saved more rows than its stash holds
// (check_paged_stash_overflow), every rank zeroes its gradients and runs the forward-backward
// again in synced dropless mode (no budget, no stash: prepare_for_rerun), then the optimizer steps
// once. Routing is drawn per layer as the ledger draws it (peak_rank_load_factor's tokens), so
// the time and the memory agree on whether a step reruns.
struct SyncFreeRerun {
  std::int64_t layer = -1;  // the first MoE layer a rank of which is over its budget (-1: none)
  double layer_load = 0;    // that rank's routed rows over the balanced share
  std::int64_t stage = -1;  // the first stage a rank of which saves more rows than its stash (-1: none)
  double stage_load = 0;    // that rank's rows over the balanced share, over the stage's MoE layers
  bool reruns() const { return layer >= 0 || stage >= 0; }
  // Why, in a line for reports ("" when it does not rerun).
  std::string why(const ParallelPlan& plan) const;
};
SyncFreeRerun sync_free_rerun(const ParallelPlan& plan, const Architecture& arch);

// The plan the rerun runs: the same, with neither the budget nor the stash.
ParallelPlan synced_dropless(ParallelPlan plan);

}  // namespace moesim
