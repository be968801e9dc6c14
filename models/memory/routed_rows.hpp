// Routed rows one MoE layer holds on this rank, per token of its microbatch: those the expert
// GEMMs compute on, the dispatched input the grouped GEMM saves, and the rows of the other
// tensors the grouped experts save and work on.
#pragma once

#include "models/arch/architecture.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct RoutedRows {
  double computed = 0;  // through the expert GEMMs: dropless, the load; capacity-capped, the padded capacity
  double dispatch = 0;  // the dispatched-input buffer the grouped GEMM saves (symmetric: its capacity)
  double saved = 0;     // what the grouped experts' other saved tensors hold (sync-free: the budget or the stash)
  double working = 0;   // what their live tensors in a pass hold (sync-free: the static budget)
};

// `load_factor`: the most-loaded rank's rows over the even share (peak_rank_load_factor; 1 under
// uniform routing). Dropless routing sizes by the load, capacity-capped routing by capacity
// (K x capacity_factor, padded as Olmo-core's ParallelMLP binned_gather pads), and symmetric EP
// buffers by their own capacity (rows beyond it are tail-dropped). Megatron-Core's sync-free
// path (plan.routing.rank_capacity_factor) holds its static budget, K x the factor, and its paged
// stash K x its CUDA factor (the buffer sized from the balanced rows in flight); the GEMMs still
// compute the routed rows (the grouped experts read their counts on the device).
RoutedRows routed_rows_per_token(const Architecture& arch, const ParallelPlan& plan, double load_factor);

}  // namespace moesim
