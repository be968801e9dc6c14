// A lower bound on a plan's step time that costs a few cost-book calls per layer instead of a
// replay: what `moesim plan` uses to skip replays that cannot enter its top K. It holds because
// every task of the replay takes at least its solo time (a ResourceSharing rate is at most 1),
// a rank's compute stream runs its tasks one after another (its layers' and its parameter-sync
// strategy's: sim/schedules/param_sync.hpp ComputeShare), and a pipeline stage cannot start
// before the first microbatch's forward has crossed the stages before it, nor finish before
// the last backward has crossed them back; nor run its first backward before microbatch 0 has
// crossed the whole model forward and come back to it; nor sooner than the collectives a design
// runs one after another on one stream. Tests check bound <= replayed step on many plans.
#pragma once

#include <vector>

#include "models/arch/inventory.hpp"
#include "models/costs/cost_book.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct LocalTensor;

struct StepBound {
  double step_s = 0;             // no replay of the plan can finish its step sooner
  std::int64_t bound_stage = 0;  // the stage whose chain gives the bound
};

// `inv`: the architecture's inventory (the units a design's serial stream moves: FSDP's gathers
// and reduce-scatters, sim/schedules/param_sync.hpp).
StepBound step_time_lower_bound(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan,
                                const CostBook& costs);
// The same with every stage's tensors (tensors_by_stage) already made: a planner's ledger
// structure holds them.
StepBound step_time_lower_bound(const Architecture& arch, const std::vector<const std::vector<LocalTensor>*>& stages,
                                const ParallelPlan& plan, const CostBook& costs);

// Compute-stream time of one microbatch's forward and backward (recompute included) through each
// unit, slowest shard: the embedding first, then every layer, then the LM head (num_layers + 2).
std::vector<double> unit_compute_times(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs);

}  // namespace moesim
