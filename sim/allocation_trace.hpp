// The allocation replay's record (sim/allocation_order.cpp): tensors taken from and given back
// to the caching allocator in the order a stage's step makes and frees them.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "models/memory/caching_allocator.hpp"

namespace moesim {

inline constexpr std::uint32_t kNoAllocation = 0xffffffffu;  // an id never handed out

// Allocation ids handed out in order; a dropped id is never reused.
class AllocationTrace {
 public:
  AllocationTrace(bool expandable, std::uint64_t limit) : alloc_(expandable, limit) {}
  std::uint32_t take(double bytes, AllocStream stream = AllocStream::compute) {
    if (!(bytes > 0)) return kNoAllocation;
    const std::uint32_t id = next_++;
    alloc_.allocate(id, static_cast<std::uint64_t>(std::ceil(bytes)), stream);
    ++events_;
    return id;
  }
  void drop(std::uint32_t& id) {
    if (id == kNoAllocation) return;
    alloc_.release(id);
    id = kNoAllocation;
    ++events_;
  }
  void drop_all(std::vector<std::uint32_t>& ids) {
    for (auto& id : ids) drop(id);
    ids.clear();
  }
  const CachingAllocator& allocator() const { return alloc_; }
  std::size_t events() const { return events_; }

 private:
  CachingAllocator alloc_;
  std::uint32_t next_ = 0;
  std::size_t events_ = 0;
};

}  // namespace moesim
