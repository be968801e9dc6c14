#include "models/memory/caching_allocator.hpp"

#include <algorithm>
#include <limits>

namespace moesim {

namespace {

// c10/cuda/CUDACachingAllocator.cpp constants.
constexpr std::uint64_t kMinBlockSize = 512;        // every size is rounded to 512 B
constexpr std::uint64_t kSmallSize = 1 << 20;       // largest small-pool request
constexpr std::uint64_t kSmallBuffer = 2 << 20;     // small-pool segment (and expandable page)
constexpr std::uint64_t kLargeBuffer = 20 << 20;    // segment for 1-10 MiB requests (and expandable page)
constexpr std::uint64_t kMinLargeAlloc = 10 << 20;  // below it, a request reserves kLargeBuffer
constexpr std::uint64_t kRoundLarge = 2 << 20;      // larger requests round up to 2 MiB

constexpr std::uint8_t kReleased = 0xff;  // pool tag of a segment given back to the device

std::uint64_t round_up(std::uint64_t x, std::uint64_t to) { return (x + to - 1) / to * to; }

std::uint64_t round_size(std::uint64_t bytes) { return std::max(kMinBlockSize, round_up(bytes, kMinBlockSize)); }

std::uint64_t allocation_size(std::uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(size, kRoundLarge);
}

}  // namespace

std::uint64_t CachingAllocator::footprint_if_kept(std::uint64_t bytes) {
  const std::uint64_t size = round_size(bytes);
  return size < kMinLargeAlloc ? size : allocation_size(size);
}

void CachingAllocator::allocate(std::uint32_t id, std::uint64_t bytes, AllocStream stream) {
  const std::uint64_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  const auto pool = static_cast<std::uint8_t>(static_cast<unsigned>(stream) * 2 + (small ? 0 : 1));
  if (where_.size() <= id) where_.resize(id + 1);
  if (!take_cached(id, size, pool)) {
    if (expandable_) {
      grow_expandable(id, size, pool, small);
    } else {
      reserve_segment(id, size, pool, small);
    }
  }
  peaks_.allocated = std::max(peaks_.allocated, allocated_);
  peaks_.reserved = std::max(peaks_.reserved, reserved_);
  peaks_.required = std::max(peaks_.required, allocated_);  // live blocks are always held
}

bool CachingAllocator::take_cached(std::uint32_t id, std::uint64_t size, std::uint8_t pool) {
  // Best fit: the smallest free block that holds the request; ties to the lowest address.
  std::size_t best_segment = 0, best_block = 0;
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t s = 0; s < keys_.size(); ++s) {
    if (keys_[s].pool != pool || keys_[s].largest_free < size) continue;
    const auto& blocks = segments_[s].blocks;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      if (blocks[b].free && blocks[b].size >= size && blocks[b].size < best) {
        best = blocks[b].size;
        best_segment = s;
        best_block = b;
      }
    }
  }
  if (best == std::numeric_limits<std::uint64_t>::max()) return false;
  place(segments_[best_segment], best_block, id, size, (pool & 1) == 0);
  where_[id] = {static_cast<std::uint32_t>(best_segment), true};
  rekey(best_segment);
  return true;
}

void CachingAllocator::rekey(std::size_t segment) {
  if (keys_.size() <= segment) keys_.resize(segment + 1);
  const Segment& s = segments_[segment];
  std::uint64_t largest = 0;
  for (const Block& b : s.blocks)
    if (b.free) largest = std::max(largest, b.size);
  keys_[segment] = {s.pool, largest};
}

void CachingAllocator::place(Segment& s, std::size_t b, std::uint32_t id, std::uint64_t size, bool small) {
  if (s.blocks[b].unmapped > 0) {
    make_room(s.blocks[b].unmapped);
    reserved_ += s.blocks[b].unmapped;
    s.blocks[b].unmapped = 0;
  }
  const std::uint64_t rest = s.blocks[b].size - size;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {
    Block tail{s.blocks[b].offset + size, rest, 0, 0, true};
    s.blocks[b].size = size;
    s.blocks.insert(s.blocks.begin() + static_cast<std::ptrdiff_t>(b) + 1, tail);
  }
  s.blocks[b].free = false;
  s.blocks[b].id = id;
  allocated_ += s.blocks[b].size;
}

void CachingAllocator::reserve_segment(std::uint32_t id, std::uint64_t size, std::uint8_t pool, bool small) {
  const std::uint64_t seg = allocation_size(size);
  make_room(seg);
  peaks_.required = std::max(peaks_.required, unreleasable() + seg);
  segments_.push_back({pool, seg, {{0, seg, 0, 0, true}}});
  reserved_ += seg;
  place(segments_.back(), 0, id, size, small);
  where_[id] = {static_cast<std::uint32_t>(segments_.size() - 1), true};
  rekey(segments_.size() - 1);
}

void CachingAllocator::grow_expandable(std::uint32_t id, std::uint64_t size, std::uint8_t pool, bool small) {
  std::size_t s = 0;
  while (s < segments_.size() && segments_[s].pool != pool) ++s;
  if (s == segments_.size()) segments_.push_back({pool, 0, {}});
  Segment& seg = segments_[s];
  const std::uint64_t page = small ? kSmallBuffer : kLargeBuffer;
  const bool tail_free = !seg.blocks.empty() && seg.blocks.back().free;
  const std::uint64_t have = tail_free ? seg.blocks.back().size : 0;
  const std::uint64_t grow = round_up(size - have, page);
  make_room(grow);
  peaks_.required = std::max(peaks_.required, unreleasable() + grow);
  if (tail_free) {
    seg.blocks.back().size += grow;
  } else {
    seg.blocks.push_back({seg.size, grow, 0, 0, true});
  }
  seg.size += grow;
  reserved_ += grow;
  place(seg, seg.blocks.size() - 1, id, size, small);
  where_[id] = {static_cast<std::uint32_t>(s), true};
  rekey(s);
}

void CachingAllocator::release(std::uint32_t id) {
  if (id >= where_.size() || !where_[id].live) return;
  where_[id].live = false;
  auto& blocks = segments_[where_[id].segment].blocks;
  std::size_t b = 0;
  while (b < blocks.size() && (blocks[b].free || blocks[b].id != id)) ++b;
  if (b == blocks.size()) return;
  allocated_ -= blocks[b].size;
  blocks[b].free = true;
  if (b + 1 < blocks.size() && blocks[b + 1].free) {
    blocks[b].size += blocks[b + 1].size;
    blocks[b].unmapped += blocks[b + 1].unmapped;
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(b) + 1);
  }
  if (b > 0 && blocks[b - 1].free) {
    blocks[b - 1].size += blocks[b].size;
    blocks[b - 1].unmapped += blocks[b].unmapped;
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(b));
  }
  rekey(where_[id].segment);
}

void CachingAllocator::make_room(std::uint64_t bytes) {
  if (limit_ == 0 || reserved_ + bytes <= limit_) return;
  release_cached();
  if (reserved_ + bytes > limit_) {
    failed_ = true;
    shortfall_ = std::max(shortfall_, reserved_ + bytes - limit_);
  }
}

void CachingAllocator::release_cached() {
  for (Segment& s : segments_) {
    if (s.pool == kReleased) continue;
    if (!expandable_) {
      if (s.blocks.size() == 1 && s.blocks[0].free) {
        reserved_ -= s.size;
        s = {kReleased, 0, {}};
        rekey(static_cast<std::size_t>(&s - segments_.data()));
      }
      continue;
    }
    const std::uint64_t page = (s.pool & 1) == 0 ? kSmallBuffer : kLargeBuffer;
    for (Block& b : s.blocks) {
      if (!b.free) continue;
      const std::uint64_t first = round_up(b.offset, page), last = (b.offset + b.size) / page * page;
      const std::uint64_t pages = last > first ? last - first : 0;
      if (pages > b.unmapped) {
        reserved_ -= pages - b.unmapped;
        b.unmapped = pages;
      }
    }
  }
}

std::uint64_t CachingAllocator::unreleasable() const {
  std::uint64_t held = 0;
  for (const Segment& s : segments_) {
    if (!expandable_) {
      const bool live = std::any_of(s.blocks.begin(), s.blocks.end(), [](const Block& b) { return !b.free; });
      if (live) held += s.size;
      continue;
    }
    // Expandable: every whole page inside a free block can be unmapped.
    const std::uint64_t page = (s.pool & 1) == 0 ? kSmallBuffer : kLargeBuffer;
    std::uint64_t unmappable = 0;
    for (const Block& b : s.blocks) {
      if (!b.free) continue;
      const std::uint64_t first = round_up(b.offset, page), last = (b.offset + b.size) / page * page;
      if (last > first) unmappable += last - first;
    }
    held += s.size - unmappable;
  }
  return held;
}

}  // namespace moesim
