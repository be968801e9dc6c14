// A replay of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): what it
// reserves from the device for a given order of allocations and frees, and how much of that it
// cannot give back when memory runs short.
//
// Mechanisms kept (each as the allocator implements it, default configuration):
// - sizes are rounded up to 512 B (round_size); requests up to 1 MiB come from the small pool,
//   larger ones from the large pool; each CUDA stream has its own pools (a block freed on one
//   stream is never handed to an allocation on another);
// - a request takes the smallest cached free block of its pool that fits (get_free_block's
//   size-ordered set), split when the rest is large enough (should_split: >= 512 B in the small
//   pool, > 1 MiB in the large pool); freed blocks merge with free neighbours of their segment;
// - when no cached block fits, a new segment is reserved (get_allocation_size): 2 MiB for small
//   requests, 20 MiB for requests under 10 MiB, else the request rounded up to 2 MiB;
// - with expandable_segments (PYTORCH_CUDA_ALLOC_CONF), each stream and pool has one segment that
//   grows at its end by mapping pages (2 MiB small pool, 20 MiB large pool).
// When a reservation fails, the allocator frees every cached segment that holds no live block
// (release_cached_blocks; with expandable segments it unmaps every whole free page) and retries.
// So two numbers: the high-water mark of reserved memory on a device with room (what
// torch.cuda.max_memory_reserved reports), and the memory the allocator must hold at its worst
// reservation (live segments, or mapped pages not wholly free, plus the new reservation): the
// allocator runs out of memory only when that exceeds the device.
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

namespace moesim {

enum class AllocStream : std::uint8_t { compute, gather, reduce, count };

struct AllocatorPeaks {
  std::uint64_t allocated = 0;  // largest sum of live requests (rounded to 512 B)
  std::uint64_t reserved = 0;   // largest sum of reserved segments (or mapped pages)
  std::uint64_t required = 0;   // largest hold at a reservation after releasing what can be released
};

class CachingAllocator {
 public:
  // `limit`: bytes the allocator may reserve (0: no limit). Past it, a reservation first releases
  // what it can, and is marked failed (the replay goes on) when that is not enough.
  explicit CachingAllocator(bool expandable_segments, std::uint64_t limit = 0)
      : expandable_(expandable_segments), limit_(limit) {}

  // Starts again empty with this segment mode and limit, keeping the buffers it grew (a plan
  // search replays thousands of records on one thread).
  void reset(bool expandable_segments, std::uint64_t limit);

  // Allocate `bytes` for tensor `id` (ids are small integers, each live at most once).
  void allocate(std::uint32_t id, std::uint64_t bytes, AllocStream stream);
  void release(std::uint32_t id);
  const AllocatorPeaks& peaks() const { return peaks_; }
  // What a tensor that is never freed adds to reserved memory: its own segment rounded to 2 MiB
  // (10 MiB and more), else its 512-byte rounding inside a shared segment.
  static std::uint64_t footprint_if_kept(std::uint64_t bytes);
  std::uint64_t reserved() const { return reserved_; }
  bool failed() const { return failed_; }
  std::uint64_t shortfall() const { return shortfall_; }  // most bytes a failed reservation lacked

 private:
  struct Block {
    std::uint64_t offset = 0, size = 0;
    std::uint64_t unmapped = 0;  // expandable: pages given back by a release, mapped again on use
    std::uint32_t id = 0;
    bool free = true;
  };
  struct Segment {
    std::uint8_t pool = 0;  // stream * 2 + (large ? 1 : 0)
    std::uint64_t size = 0;
    std::vector<Block> blocks;  // address order, covering [0, size)
  };
  struct Where {
    std::uint32_t segment = 0;
    std::uint64_t offset = 0;
    bool live = false;
  };
  // A free block in the best-fit index, ordered as get_free_block searches: pool, then size,
  // then address (segment, offset). Packed into two integers (sizes and offsets are whole
  // 512-byte units): the index is a sorted array that every allocation and free inserts into or
  // erases from, so its entries are kept small and compared in two steps.
  struct FreeKey {
    std::uint64_t pool_size = 0;  // pool << 56 | size / 512
    std::uint64_t place = 0;      // segment << 40 | offset / 512
    auto operator<=>(const FreeKey&) const = default;
    static FreeKey of(std::uint8_t pool, std::uint64_t size, std::uint32_t segment, std::uint64_t offset);
    std::uint8_t pool() const { return static_cast<std::uint8_t>(pool_size >> 56); }
    std::uint32_t segment() const { return static_cast<std::uint32_t>(place >> 40); }
    std::uint64_t offset() const { return (place & ((std::uint64_t{1} << 40) - 1)) * 512; }
  };

  bool take_cached(std::uint32_t id, std::uint64_t size, std::uint8_t pool);
  void reserve_segment(std::uint32_t id, std::uint64_t size, std::uint8_t pool, bool small);
  void grow_expandable(std::uint32_t id, std::uint64_t size, std::uint8_t pool, bool small);
  // `free_at`: where the block's key sits in free_, when the caller has just found it (index_free).
  void place(std::uint32_t segment, std::size_t block, std::uint32_t id, std::uint64_t size, bool small,
             std::size_t free_at = kUnknown);
  std::uint32_t add_segment(std::uint8_t pool);
  static std::size_t block_at(const std::vector<Block>& blocks, std::uint64_t offset);  // by address
  std::uint64_t unreleasable() const;   // what release_cached_blocks could not give back now
  void make_room(std::uint64_t bytes);  // a reservation of `bytes` under the limit
  void release_cached();                // release_cached_blocks
  // Keeps free_ in step with a free block. Removing, `at` may say where its key sits (a search the
  // caller just made); it is checked against the key before it is trusted.
  static constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);
  void index_free(std::uint32_t segment, const Block& b, bool add, std::size_t at = kUnknown);

  bool expandable_;
  std::uint64_t limit_ = 0;
  bool failed_ = false;
  std::uint64_t shortfall_ = 0;
  std::vector<Segment> segments_;
  std::vector<std::vector<Block>> spare_;  // emptied block lists of an earlier replay, reused
  std::vector<std::uint32_t> live_;        // live blocks per segment
  std::vector<FreeKey> free_;              // sorted: a flat set (a few hundred entries, no node per entry)
  std::uint64_t held_ = 0;                 // bytes of segments holding a live block (without expandable segments)
  std::vector<Where> where_;
  std::uint64_t allocated_ = 0, reserved_ = 0;
  AllocatorPeaks peaks_;
};

}  // namespace moesim
