// The caching-allocator replay (models/memory/caching_allocator.hpp) on hand-built sequences whose
// segments, splits and releases follow c10/cuda/CUDACachingAllocator.cpp's rules.
#include <catch2/catch.hpp>

#include "models/memory/caching_allocator.hpp"

using namespace moesim;

namespace {
constexpr std::uint64_t MiB = 1 << 20;
}

TEST_CASE("requests are rounded and reserve segments by size class", "[unit]") {
  CachingAllocator a(false);
  a.allocate(0, 1, AllocStream::compute);  // small pool: a 2 MiB segment, 512 B block
  CHECK(a.reserved() == 2 * MiB);
  CHECK(a.peaks().allocated == 512);
  a.allocate(1, 3 * MiB / 2, AllocStream::compute);  // 1-10 MiB: a 20 MiB large-pool segment
  CHECK(a.reserved() == 22 * MiB);
  a.allocate(2, 11 * MiB, AllocStream::compute);  // best fit: the 18.5 MiB left of that segment
  CHECK(a.reserved() == 22 * MiB);
  a.allocate(3, 11 * MiB, AllocStream::compute);  // >= 10 MiB, no fit: its own segment, rounded to 2 MiB
  CHECK(a.reserved() == 34 * MiB);
  a.allocate(4, 4 * MiB, AllocStream::compute);  // the 7.5 MiB left of the 20 MiB segment
  CHECK(a.reserved() == 34 * MiB);
  CHECK(CachingAllocator::footprint_if_kept(11 * MiB) == 12 * MiB);
  CHECK(CachingAllocator::footprint_if_kept(3 * MiB) == 3 * MiB);
}

TEST_CASE("the smallest free block that fits is split and reused, merged blocks serve larger requests", "[unit]") {
  CachingAllocator a(false);
  a.allocate(0, 40 * MiB, AllocStream::compute);
  a.allocate(1, 30 * MiB, AllocStream::compute);
  a.release(0);
  a.release(1);
  a.allocate(2, 24 * MiB, AllocStream::compute);  // best fit: the 30 MiB segment, split 24 + 6
  a.allocate(3, 36 * MiB, AllocStream::compute);  // the 40 MiB segment
  CHECK(a.reserved() == 70 * MiB);
  a.allocate(4, 5 * MiB, AllocStream::compute);  // the 6 MiB tail of the split
  CHECK(a.reserved() == 70 * MiB);
  a.release(2);
  a.release(4);  // 24 + 5 + 1 merge back into the whole 30 MiB segment
  a.allocate(5, 30 * MiB, AllocStream::compute);
  CHECK(a.reserved() == 70 * MiB);
}

TEST_CASE("a request no cached block holds reserves more, only segments with a live block are held", "[unit]") {
  CachingAllocator a(false);
  a.allocate(0, 40 * MiB, AllocStream::compute);
  a.allocate(1, 40 * MiB, AllocStream::compute);
  a.release(0);
  a.allocate(2, 60 * MiB, AllocStream::compute);
  CHECK(a.peaks().allocated == 100 * MiB);
  CHECK(a.peaks().reserved == 140 * MiB);
  // At the reservation, the freed 40 MiB segment could have been released: 40 + 60 are held.
  CHECK(a.peaks().required == 100 * MiB);
}

TEST_CASE("each stream keeps its own cache", "[unit]") {
  CachingAllocator a(false);
  a.allocate(0, 40 * MiB, AllocStream::gather);
  a.release(0);
  a.allocate(1, 40 * MiB, AllocStream::compute);
  CHECK(a.reserved() == 80 * MiB);
  a.allocate(2, 40 * MiB, AllocStream::gather);
  CHECK(a.reserved() == 80 * MiB);
}

TEST_CASE("expandable segments grow at the end in 20 MiB pages and give back whole free pages", "[unit]") {
  CachingAllocator a(true);
  a.allocate(0, 30 * MiB, AllocStream::compute);  // maps 40 MiB
  CHECK(a.reserved() == 40 * MiB);
  a.allocate(1, 8 * MiB, AllocStream::compute);  // the 10 MiB left at the end
  CHECK(a.reserved() == 40 * MiB);
  a.allocate(2, 45 * MiB, AllocStream::compute);  // the 2 MiB free tail + 60 MiB more
  CHECK(a.reserved() == 100 * MiB);
  a.release(0);  // a 30 MiB hole at [0, 30): one whole 20 MiB page could be unmapped
  a.allocate(3, 50 * MiB, AllocStream::compute);
  CHECK(a.reserved() == 140 * MiB);
  CHECK(a.peaks().required == 80 * MiB + 40 * MiB);
}

TEST_CASE("under a limit the allocator releases its free segments and retries before failing", "[unit]") {
  for (const std::uint64_t limit : {100 * MiB, 90 * MiB}) {
    INFO(limit / MiB << " MiB");
    CachingAllocator a(false, limit);
    a.allocate(0, 40 * MiB, AllocStream::compute);
    a.allocate(1, 40 * MiB, AllocStream::compute);
    a.release(0);
    a.allocate(2, 60 * MiB, AllocStream::compute);  // 80 + 60 > limit: release the free 40 MiB
    CHECK(a.reserved() == 100 * MiB);
    CHECK(a.failed() == (limit < 100 * MiB));
    CHECK(a.shortfall() == (limit < 100 * MiB ? 10 * MiB : 0));
  }
  CachingAllocator e(true, 100 * MiB);
  e.allocate(0, 40 * MiB, AllocStream::compute);
  e.allocate(1, 40 * MiB, AllocStream::compute);
  e.release(0);  // expandable: the hole's two pages are unmapped, then mapped again on use
  e.allocate(2, 60 * MiB, AllocStream::compute);
  CHECK_FALSE(e.failed());
  CHECK(e.reserved() == 100 * MiB);
  e.allocate(3, 20 * MiB, AllocStream::compute);  // takes the hole: its pages come back
  CHECK(e.failed());
}

TEST_CASE("a reset allocator replays as a new one does", "[unit]") {
  // A sequence with splits, merges, two streams, a limit that fails and expandable growth.
  const auto feed = [](CachingAllocator& a) {
    a.allocate(0, 40 * MiB, AllocStream::compute);
    a.allocate(1, 3 * MiB, AllocStream::gather);
    a.allocate(2, 30 * MiB, AllocStream::compute);
    a.release(0);
    a.allocate(3, 24 * MiB, AllocStream::compute);
    a.allocate(4, 90 * MiB, AllocStream::compute);
    a.release(2);
    a.release(1);
    a.allocate(5, 500 * 1024, AllocStream::compute);
  };
  const auto same = [](const CachingAllocator& x, const CachingAllocator& y) {
    CHECK(x.peaks().allocated == y.peaks().allocated);
    CHECK(x.peaks().reserved == y.peaks().reserved);
    CHECK(x.peaks().required == y.peaks().required);
    CHECK(x.reserved() == y.reserved());
    CHECK(x.failed() == y.failed());
    CHECK(x.shortfall() == y.shortfall());
  };
  CachingAllocator reused(false);
  feed(reused);
  for (const bool expandable : {false, true}) {
    for (const std::uint64_t limit : {std::uint64_t{0}, 100 * MiB}) {
      INFO("expandable " << expandable << ", limit " << limit);
      CachingAllocator fresh(expandable, limit);
      feed(fresh);
      reused.reset(expandable, limit);
      feed(reused);
      same(reused, fresh);
    }
  }
  CHECK(reused.failed());  // the last round ran under the limit and ran out
}
