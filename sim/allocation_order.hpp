// One pipeline stage's allocations and frees in the order a training step makes them, replayed
// through the caching allocator (models/memory/caching_allocator.hpp) to find what the allocator
// reserves; the ledger (models/memory/ledger.hpp) is handed this replay (InFlight::replay).
//
// The tensors are the ledger's own terms (models/memory/working_terms.hpp): each layer's saved
// activations (attention and MLP parts), its forward transients (EP staging, quantized operands),
// its backward working set (activation gradients, rebuilt activations, weight gradients), FSDP's
// gathered units (on the all-gather stream, `plan.fsdp.prefetch_depth` gathered ahead as the FSDP
// schedules issue them: schedules/fsdp2_full_reshard.cpp; FSDP1's rate limiter and backward
// prefetch keep one ahead, schedules/fsdp1_full_shard.cpp) and reduce-scatter inputs (on the
// reduce-scatter stream), the loss buffers, the update's temporaries and the weight-rebuild
// buffers. Persistent state is allocated once, each tensor its own segment or packed (only the
// allocator's rounding is added for it). Gradient accumulation without a pipeline replays two
// microbatches: after each one every working block is free again, so the cache is the same from
// the second on. A pipeline stage replays its pass order up to two rounds of passes past the
// moment it holds the most.
#pragma once

#include <cstdint>
#include <vector>

#include "models/memory/allocator_replay.hpp"
#include "models/memory/ledger.hpp"

namespace moesim {

// One pass of a pipeline stage as the allocation order sees it: which chunk, forward or which
// part of the backward, and whether it frees the pass's saved activations.
struct StagePass {
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;
  bool forward = true;
  bool input_grads = true;   // a backward computes input gradients (whole or B)
  bool weight_grads = true;  // a backward computes weight gradients (whole or W)
  bool frees = false;        // the pass ends the hold of its saved activations
};

// `order`: the stage's passes as its compute stream runs them (pipeline_schedule.hpp
// stage_pass_orders); empty: every held pass's forward, then its backward, chunk by chunk.
AllocatorReplay replay_stage_allocations(const StageAllocations& stage, const std::vector<StagePass>& order);

// The same from the stage's index (the view and routed rows drawn here).
AllocatorReplay replay_stage_allocations(const Architecture& a, const ParallelPlan& plan,
                                         const std::vector<LocalTensor>& tensors,
                                         const std::vector<LedgerItem>& persistent, std::int64_t stage,
                                         const std::vector<std::int64_t>& held_chunks,
                                         const std::vector<StagePass>& order, double allocator_limit);

// The ledger's replay over each stage's order (`orders[stage]`).
StageAllocationReplay allocation_replay(std::vector<std::vector<StagePass>> orders);

}  // namespace moesim
