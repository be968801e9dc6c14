// What the ledger asks of a caching-allocator replay, and what it gets back. The ledger computes
// a stage's tensors (working_terms.hpp); the order a step allocates and frees them is time order,
// which sim/ owns (sim/allocation_order.hpp walks the stage's pass order): the ledger is handed
// the replay as a function, so models/ knows no order of passes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct LedgerItem;
struct LocalTensor;
struct StageView;
struct RoutedRows;
struct UpdateBuffers;

// One stage's tensors as the ledger has them.
struct StageAllocations {
  const Architecture& arch;
  const ParallelPlan& plan;
  const std::vector<LocalTensor>& tensors;
  const std::vector<LedgerItem>& persistent;
  const StageView& view;
  const RoutedRows& routed;  // drawn once per stage (random routing samples)
  std::int64_t stage = 0;
  const std::vector<std::int64_t>& held_chunks;  // passes held per model chunk at the peak
  const UpdateBuffers& update;                   // update_buffers of the tensors
  // Bytes the allocator may reserve on the device (usable capacity minus the runtime reserves
  // outside it). When the replay reserves more on a device with room, it runs again under the
  // limit, releasing cached segments as PyTorch does; working_required then says what the step
  // needs (the limit plus the shortfall when it fails).
  double allocator_limit = 0;
};

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

using StageAllocationReplay = std::function<AllocatorReplay(const StageAllocations&)>;

}  // namespace moesim
