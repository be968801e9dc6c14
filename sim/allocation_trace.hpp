// The allocation replay's record (sim/allocation_order.cpp): tensors taken from and given back
// to the caching allocator in the order a stage's step makes and frees them. The walk records
// the events once; the caching allocator then replays them, on a device with room and, where that
// reserves more than the device has, again under the limit (run_allocator).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/memory/caching_allocator.hpp"

namespace moesim {

inline constexpr std::uint32_t kNoAllocation = 0xffffffffu;  // an id never handed out

// One allocation (bytes > 0) or release (bytes == 0) of tensor `id`.
struct AllocEvent {
  std::uint64_t bytes = 0;
  std::uint32_t id = 0;
  AllocStream stream = AllocStream::compute;
};

// Allocation ids handed out in order; a dropped id is never reused.
class AllocationTrace {
 public:
  std::uint32_t take(double bytes, AllocStream stream = AllocStream::compute) {
    if (!(bytes > 0)) return kNoAllocation;
    const std::uint32_t id = next_++;
    events_.push_back({static_cast<std::uint64_t>(std::ceil(bytes)), id, stream});
    return id;
  }
  void drop(std::uint32_t& id) {
    if (id == kNoAllocation) return;
    events_.push_back({0, id, AllocStream::compute});
    id = kNoAllocation;
  }
  void drop_all(std::vector<std::uint32_t>& ids) {
    for (auto& id : ids) drop(id);
    ids.clear();
  }
  const std::vector<AllocEvent>& events() const { return events_; }

 private:
  std::vector<AllocEvent> events_;
  std::uint32_t next_ = 0;
};

// Allocation ids a stage holds per pass (microbatch, model chunk), kept in (microbatch, chunk) order.
class PassAllocations {
 public:
  explicit PassAllocations(std::size_t chunks) : chunks_(chunks) {}
  std::vector<std::uint32_t>& of(std::int32_t microbatch, std::int32_t chunk) {
    if (microbatch < 0 || chunk < 0 || static_cast<std::size_t>(chunk) >= chunks_)
      throw std::logic_error("allocation replay: a pass outside the stage's model chunks");
    const std::size_t at = static_cast<std::size_t>(microbatch) * chunks_ + static_cast<std::size_t>(chunk);
    if (at >= ids_.size()) ids_.resize(at + 1);
    return ids_[at];
  }
  std::vector<std::vector<std::uint32_t>>& all() { return ids_; }

 private:
  std::size_t chunks_;
  std::vector<std::vector<std::uint32_t>> ids_;
};

// What the caching allocator ends with after replaying a record.
struct AllocatorOutcome {
  AllocatorPeaks peaks;
  bool failed = false;
  std::uint64_t shortfall = 0;
};

// `events` replayed through a CachingAllocator(expandable, limit). Many plans of a search replay
// the same record (a stage another candidate has too, a layout that leaves the working set as it
// was): outcomes are kept, shared by the threads, keyed by a 128-bit digest of the events, the
// segment mode and the limit, so a record is replayed once.
AllocatorOutcome run_allocator(const std::vector<AllocEvent>& events, bool expandable, std::uint64_t limit);

}  // namespace moesim
