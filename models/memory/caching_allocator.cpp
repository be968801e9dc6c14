#include "models/memory/caching_allocator.hpp"

#include <algorithm>
#include <stdexcept>

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

// Expandable segments map memory in pages of the pool's segment size.
std::uint64_t page_of(std::uint8_t pool) { return (pool & 1) == 0 ? kSmallBuffer : kLargeBuffer; }

// The whole pages inside [offset, offset + size): what unmapping a free block gives back.
std::uint64_t whole_pages(std::uint64_t offset, std::uint64_t size, std::uint64_t page) {
  const std::uint64_t first = round_up(offset, page), last = (offset + size) / page * page;
  return last > first ? last - first : 0;
}

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

void CachingAllocator::reset(bool expandable_segments, std::uint64_t limit) {
  for (Segment& s : segments_) {
    s.blocks.clear();
    spare_.push_back(std::move(s.blocks));
  }
  segments_.clear();
  live_.clear();
  free_.clear();
  where_.clear();
  expandable_ = expandable_segments;
  limit_ = limit;
  failed_ = false;
  shortfall_ = held_ = allocated_ = reserved_ = 0;
  peaks_ = {};
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

std::size_t CachingAllocator::block_at(const std::vector<Block>& blocks, std::uint64_t offset) {
  auto it = std::lower_bound(blocks.begin(), blocks.end(), offset,
                             [](const Block& b, std::uint64_t o) { return b.offset < o; });
  return static_cast<std::size_t>(it - blocks.begin());
}

CachingAllocator::FreeKey CachingAllocator::FreeKey::of(std::uint8_t pool, std::uint64_t size, std::uint32_t segment,
                                                        std::uint64_t offset) {
  // Every size and offset is a sum of 512-byte roundings and 2 MiB segment or page sizes.
  if (size % kMinBlockSize != 0 || offset % kMinBlockSize != 0 || offset / kMinBlockSize >= (std::uint64_t{1} << 40) ||
      segment >= (1u << 24))
    throw std::logic_error("caching allocator: a block outside the free index's packing");
  return {std::uint64_t{pool} << 56 | size / kMinBlockSize, std::uint64_t{segment} << 40 | offset / kMinBlockSize};
}

void CachingAllocator::index_free(std::uint32_t segment, const Block& b, bool add, std::size_t at) {
  const FreeKey key = FreeKey::of(segments_[segment].pool, b.size, segment, b.offset);
  // Keys are unique (a segment and an offset): an equal key at `at` is this block's.
  if (!add && at < free_.size() && free_[at] == key) {
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(at));
    return;
  }
  const auto pos = std::lower_bound(free_.begin(), free_.end(), key);
  if (add) {
    free_.insert(pos, key);
  } else if (pos != free_.end() && *pos == key) {
    free_.erase(pos);
  }
}

bool CachingAllocator::take_cached(std::uint32_t id, std::uint64_t size, std::uint8_t pool) {
  // Best fit: the smallest free block that holds the request; ties to the lowest address.
  const auto it = std::lower_bound(free_.begin(), free_.end(), FreeKey::of(pool, size, 0, 0));
  if (it == free_.end() || it->pool() != pool) return false;
  const std::uint32_t segment = it->segment();
  place(segment, block_at(segments_[segment].blocks, it->offset()), id, size, (pool & 1) == 0,
        static_cast<std::size_t>(it - free_.begin()));
  return true;
}

void CachingAllocator::place(std::uint32_t segment, std::size_t b, std::uint32_t id, std::uint64_t size, bool small,
                             std::size_t free_at) {
  Segment& s = segments_[segment];
  if (s.blocks[b].unmapped > 0) {
    make_room(s.blocks[b].unmapped);  // may release segments and so move free_'s entries
    reserved_ += s.blocks[b].unmapped;
    s.blocks[b].unmapped = 0;
  }
  index_free(segment, s.blocks[b], false, free_at);
  const std::uint64_t rest = s.blocks[b].size - size;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {
    Block tail{s.blocks[b].offset + size, rest, 0, 0, true};
    s.blocks[b].size = size;
    s.blocks.insert(s.blocks.begin() + static_cast<std::ptrdiff_t>(b) + 1, tail);
    index_free(segment, tail, true);
  }
  s.blocks[b].free = false;
  s.blocks[b].id = id;
  allocated_ += s.blocks[b].size;
  if (live_[segment]++ == 0 && !expandable_) held_ += s.size;
  where_[id] = {segment, s.blocks[b].offset, true};
}

std::uint32_t CachingAllocator::add_segment(std::uint8_t pool) {
  std::vector<Block> blocks;
  if (!spare_.empty()) {
    blocks = std::move(spare_.back());
    spare_.pop_back();
  }
  segments_.push_back({pool, 0, std::move(blocks)});
  live_.push_back(0);
  return static_cast<std::uint32_t>(segments_.size() - 1);
}

void CachingAllocator::reserve_segment(std::uint32_t id, std::uint64_t size, std::uint8_t pool, bool small) {
  const std::uint64_t seg = allocation_size(size);
  make_room(seg);
  peaks_.required = std::max(peaks_.required, unreleasable() + seg);
  const std::uint32_t s = add_segment(pool);
  segments_[s].size = seg;
  segments_[s].blocks.push_back({0, seg, 0, 0, true});
  index_free(s, segments_[s].blocks.back(), true);
  reserved_ += seg;
  place(s, 0, id, size, small);
}

void CachingAllocator::grow_expandable(std::uint32_t id, std::uint64_t size, std::uint8_t pool, bool small) {
  std::uint32_t s = 0;
  while (s < segments_.size() && segments_[s].pool != pool) ++s;
  if (s == segments_.size()) s = add_segment(pool);
  const std::uint64_t page = page_of(pool);
  const bool tail_free = !segments_[s].blocks.empty() && segments_[s].blocks.back().free;
  const std::uint64_t have = tail_free ? segments_[s].blocks.back().size : 0;
  const std::uint64_t grow = round_up(size - have, page);
  make_room(grow);
  peaks_.required = std::max(peaks_.required, unreleasable() + grow);
  Segment& seg = segments_[s];
  if (tail_free) {
    index_free(s, seg.blocks.back(), false);
    seg.blocks.back().size += grow;
  } else {
    seg.blocks.push_back({seg.size, grow, 0, 0, true});
  }
  index_free(s, seg.blocks.back(), true);
  seg.size += grow;
  reserved_ += grow;
  place(s, seg.blocks.size() - 1, id, size, small);
}

void CachingAllocator::release(std::uint32_t id) {
  if (id >= where_.size() || !where_[id].live) return;
  where_[id].live = false;
  const std::uint32_t segment = where_[id].segment;
  Segment& s = segments_[segment];
  auto& blocks = s.blocks;
  std::size_t b = block_at(blocks, where_[id].offset);
  if (b == blocks.size() || blocks[b].free || blocks[b].id != id) return;
  allocated_ -= blocks[b].size;
  blocks[b].free = true;
  if (--live_[segment] == 0 && !expandable_) held_ -= s.size;
  if (b + 1 < blocks.size() && blocks[b + 1].free) {
    index_free(segment, blocks[b + 1], false);
    blocks[b].size += blocks[b + 1].size;
    blocks[b].unmapped += blocks[b + 1].unmapped;
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(b) + 1);
  }
  if (b > 0 && blocks[b - 1].free) {
    index_free(segment, blocks[b - 1], false);
    blocks[b - 1].size += blocks[b].size;
    blocks[b - 1].unmapped += blocks[b].unmapped;
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(b));
    --b;
  }
  index_free(segment, blocks[b], true);
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
  for (std::uint32_t i = 0; i < segments_.size(); ++i) {
    Segment& s = segments_[i];
    if (s.pool == kReleased) continue;
    if (!expandable_) {
      if (s.blocks.size() == 1 && s.blocks[0].free) {
        index_free(i, s.blocks[0], false);
        reserved_ -= s.size;
        s = {kReleased, 0, {}};
      }
      continue;
    }
    for (Block& b : s.blocks) {
      if (!b.free) continue;
      const std::uint64_t pages = whole_pages(b.offset, b.size, page_of(s.pool));
      if (pages > b.unmapped) {
        reserved_ -= pages - b.unmapped;
        b.unmapped = pages;
      }
    }
  }
}

std::uint64_t CachingAllocator::unreleasable() const {
  if (!expandable_) return held_;
  // Expandable: every whole page inside a free block can be unmapped.
  std::uint64_t held = 0;
  for (const Segment& s : segments_) {
    std::uint64_t unmappable = 0;
    for (const Block& b : s.blocks)
      if (b.free) unmappable += whole_pages(b.offset, b.size, page_of(s.pool));
    held += s.size - unmappable;
  }
  return held;
}

}  // namespace moesim
