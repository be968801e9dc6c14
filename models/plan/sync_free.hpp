// Megatron-Core's sync-free MoE path and its paged stash (docs/user-guide/features/paged_stash.md):
// what a plan needs for them (plan.expert_parallel.rank_capacity_factor,
// plan.activations.moe_paged_stash). What they hold is models/memory/routed_rows.hpp's.
#pragma once

#include "models/arch/architecture.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

// The first rule the plan breaks (its path under plan and why), or an empty path.
PlanRule sync_free_rule(const ParallelPlan& plan, const Architecture& arch);

}  // namespace moesim
