// A pipeline layer split that balances the virtual stages' compute: the embedding weighs on the
// first, the final norm + LM head (+ loss) on the last, so an even split leaves the last stage
// the slowest (Megatron-LM's --decoder-first/last-pipeline-num-layers exist for this). The split
// minimises the largest virtual stage's compute-stream time per microbatch (sim/step_bound.hpp
// unit_compute_times) over contiguous splits with at least one layer each (linear partition by
// dynamic programming; ties keep the earlier cut, so the answer is deterministic).
#pragma once

#include <cstdint>
#include <vector>

#include "models/costs/cost_book.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

std::vector<std::int64_t> balanced_layer_split(const Architecture& arch, const ParallelPlan& plan,
                                               const CostBook& costs);

}  // namespace moesim
