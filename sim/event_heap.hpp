// The engine's pending events: each running unit has at most one (its finish time at its current
// rate), held in an indexed binary min-heap so that a rate change moves the unit's one entry
// instead of leaving a stale one behind. Ordered by (time, sequence number): the sequence number
// is taken at every (re)schedule, so equal times resolve the same way on every run.
#pragma once

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace moesim {

class EventHeap {
 public:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;

  // Empties the heap; unit ids it knows of stay known (their slots absent).
  void reset() {
    heap_.clear();
    pos_.assign(pos_.size(), kAbsent);
    seq_ = 0;
  }
  // Room for unit ids below `units` (the engine's units are reused slots: a few dozen at most).
  void reserve_units(std::size_t units) {
    if (pos_.size() < units) pos_.resize(units, kAbsent);
  }
  bool empty() const { return heap_.empty(); }
  bool contains(std::uint32_t unit) const { return pos_[unit] != kAbsent; }
  std::uint32_t top() const { return static_cast<std::uint32_t>(heap_.front().order); }
  double top_time() const { return std::bit_cast<double>(heap_.front().time_bits); }

  // Inserts `unit` or moves its entry to `time` (finite, not negative).
  void schedule(std::uint32_t unit, double time) {
    if (seq_ == kLastSeq) throw std::length_error("event heap: more than 2^32 - 1 (re)schedules in one replay");
    // + 0.0 turns -0 into +0, so that the bit patterns of the times order as the times do.
    const Entry e{std::bit_cast<std::uint64_t>(time + 0.0), (std::uint64_t{seq_++} << 32) | unit};
    std::uint32_t at = pos_[unit];
    if (at == kAbsent) {
      at = static_cast<std::uint32_t>(heap_.size());
      heap_.emplace_back();
      sift_up(at, e);
      return;
    }
    // Up when it now comes before its parent, else down (a no-op when it stays put).
    if (at > 0 && e.before(heap_[(at - 1) / 2]))
      sift_up(at, e);
    else
      sift_down(at, e);
  }

  void pop() {
    pos_[top()] = kAbsent;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (heap_.empty()) return;
    sift_down(0, last);
  }

 private:
  // 16 bytes, compared as integers: a non-negative double's bit pattern orders as its value, and
  // the sequence number sits above the unit in `order`, so (time, sequence) decides as before.
  struct Entry {
    std::uint64_t time_bits;
    std::uint64_t order;  // sequence number << 32 | unit
    bool before(const Entry& o) const {
      return time_bits < o.time_bits || (time_bits == o.time_bits && order < o.order);
    }
  };
  static constexpr std::uint32_t kLastSeq = 0xffffffffu;

  // Both take the entry to place by value, not re-read from heap_[at]: a load of an entry just
  // stored field by field misses store forwarding and stalls (~40% of a re-rate's time).
  void sift_up(std::uint32_t at, const Entry e) {
    while (at > 0) {
      const std::uint32_t parent = (at - 1) / 2;
      if (!e.before(heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, e);
  }

  void sift_down(std::uint32_t at, const Entry e) {
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1].before(heap_[child])) ++child;
      if (!heap_[child].before(e)) break;
      place(at, heap_[child]);
      at = child;
    }
    place(at, e);
  }

  void place(std::uint32_t at, const Entry& e) {
    heap_[at] = e;
    pos_[static_cast<std::uint32_t>(e.order)] = at;
  }

  std::vector<Entry> heap_;
  std::vector<std::uint32_t> pos_;  // unit -> index in heap_, or kAbsent
  std::uint32_t seq_ = 0;
};

}  // namespace moesim
