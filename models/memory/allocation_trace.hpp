// One pipeline stage's allocations and frees in the order a training step makes them, replayed
// through the caching allocator (caching_allocator.hpp) to find what the allocator reserves.
//
// The tensors are the ledger's own terms (working_terms.hpp): each layer's saved activations
// (attention and MLP parts), its forward transients (EP staging, quantized operands), its backward
// working set (activation gradients, rebuilt activations, weight gradients), FSDP's gathered units
// (on the all-gather stream) and reduce-scatter inputs (on the reduce-scatter stream), the loss
// buffers, the update's temporaries and the weight-rebuild buffers. Persistent state is allocated
// once, each tensor its own segment or packed (only the allocator's rounding is added for it).
// Gradient accumulation without a pipeline replays two microbatches: after each one every
// working block is free again, so the cache is the same from the second on. A pipeline stage
// replays its pass order up to two rounds of passes past the moment it holds the most.
#pragma once

#include <cstdint>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/memory/ledger.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

struct AllocatorReplay {
  double kept_from_start = 0;         // persistent bytes allocated before the first step
  double persistent_rounding = 0;     // bytes their segments add
  double working_allocated = 0;       // largest set the step allocates (lazy state included)
  double working_reserved = 0;        // reserved high-water mark of the step's segments on this device
  double working_reserved_roomy = 0;  // the same on a device with room (no release needed)
  double working_required = 0;        // the most the step's segments must hold at a reservation
  bool out_of_memory = false;         // a reservation failed under the limit after releasing
  std::size_t events = 0;             // allocations and frees replayed
};

// `allocator_limit`: bytes the allocator may reserve on the device (usable capacity minus the
// runtime reserves outside it). When the replay reserves more on a device with room, it runs
// again under the limit, releasing cached segments as PyTorch does; working_required then says
// what the step needs (the limit plus the shortfall when it fails).
AllocatorReplay replay_stage_allocations(const Architecture& a, const ParallelPlan& plan,
                                         const std::vector<LocalTensor>& tensors,
                                         const std::vector<LedgerItem>& persistent, std::int64_t stage,
                                         const std::vector<std::int64_t>& held_chunks,
                                         const std::vector<StagePass>& order, double allocator_limit);

// The same from the stage's view and routed rows (working_terms.hpp), as the ledger has them.
struct StageView;
struct RoutedRows;
AllocatorReplay replay_stage_allocations(const Architecture& a, const ParallelPlan& plan,
                                         const std::vector<LocalTensor>& tensors,
                                         const std::vector<LedgerItem>& persistent, const StageView& view,
                                         const RoutedRows& routed, const std::vector<std::int64_t>& held_chunks,
                                         const std::vector<StagePass>& order, double allocator_limit);

}  // namespace moesim
