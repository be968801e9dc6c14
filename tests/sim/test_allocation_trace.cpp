// The allocation replay's record and its replay through the caching allocator
// (sim/allocation_trace.hpp): a record replayed by run_allocator ends as the allocator fed the same
// calls directly does, whether its outcome was kept from an earlier replay or not.
#include <catch2/catch.hpp>

#include "sim/allocation_trace.hpp"
#include "sim/pipeline_schedule.hpp"

using namespace moesim;

namespace {
constexpr double MiB = 1 << 20;

// Records a pattern that leaves holes (so a limit makes the allocator release cached segments),
// with a gather-stream buffer beside it, and makes the same calls on `direct` as it goes.
struct Both {
  AllocationTrace trace;
  CachingAllocator& direct;
  std::uint32_t take(double bytes, AllocStream stream = AllocStream::compute) {
    const std::uint32_t id = trace.take(bytes, stream);
    if (id != kNoAllocation) direct.allocate(id, static_cast<std::uint64_t>(bytes), stream);
    return id;
  }
  void drop(std::uint32_t& id) {
    if (id != kNoAllocation) direct.release(id);
    trace.drop(id);
  }
};

AllocationTrace sample(double scale, CachingAllocator& direct) {
  Both t{{}, direct};
  std::vector<std::uint32_t> held;
  for (int i = 0; i < 6; ++i) held.push_back(t.take((3 + i) * scale * MiB));
  std::uint32_t g = t.take(12 * scale * MiB, AllocStream::gather);
  for (std::size_t i = 0; i < held.size(); i += 2) t.drop(held[i]);
  std::uint32_t big = t.take(30 * scale * MiB);
  t.drop(g);
  t.drop(big);
  for (auto& id : held) t.drop(id);
  std::uint32_t none = t.take(0);  // nothing to allocate: no event, and dropping it records none
  t.drop(none);
  return t.trace;
}

AllocatorOutcome outcome(const CachingAllocator& a) { return {a.peaks(), a.failed(), a.shortfall()}; }

void same(const AllocatorOutcome& x, const AllocatorOutcome& y) {
  CHECK(x.peaks.allocated == y.peaks.allocated);
  CHECK(x.peaks.reserved == y.peaks.reserved);
  CHECK(x.peaks.required == y.peaks.required);
  CHECK(x.failed == y.failed);
  CHECK(x.shortfall == y.shortfall);
}
}  // namespace

TEST_CASE("a recorded allocation trace replays as the allocator fed directly, kept or not", "[unit]") {
  const auto limit = static_cast<std::uint64_t>(60 * MiB), tight = static_cast<std::uint64_t>(20 * MiB);
  CachingAllocator roomy(false), capped(false, limit), failing(false, tight), expandable(true);
  const AllocationTrace t = sample(1, roomy);
  for (CachingAllocator* a : {&capped, &failing, &expandable}) sample(1, *a);
  REQUIRE(t.events().size() == 16);          // 8 takes, 8 drops; the empty take records nothing
  for (int round = 0; round < 2; ++round) {  // the second round reads the kept outcomes
    same(run_allocator(t.events(), false, 0), outcome(roomy));
    same(run_allocator(t.events(), false, limit), outcome(capped));
  }
  // The limit is part of what is kept: under a tighter one the allocator fails where it had room.
  CHECK_FALSE(run_allocator(t.events(), false, 0).failed);
  REQUIRE(failing.failed());
  same(run_allocator(t.events(), false, tight), outcome(failing));
  // So is every byte of the record: a record twice as large is not the first one's outcome.
  CachingAllocator doubled_direct(false);
  const AllocationTrace doubled = sample(2, doubled_direct);
  same(run_allocator(doubled.events(), false, 0), outcome(doubled_direct));
  CHECK(doubled_direct.peaks().allocated > roomy.peaks().allocated);
  // And the segment mode.
  same(run_allocator(t.events(), true, 0), outcome(expandable));
}

TEST_CASE("a stage's pipeline order is the same when asked again", "[unit]") {
  ParallelPlan plan;
  plan.pp = 4;
  plan.pp_schedule = PipelineSchedule::interleaved_1f1b;
  plan.pp_virtual = 2;
  for (int round = 0; round < 2; ++round) {
    const std::vector<PipeOp> order = stage_schedule(plan, 1, 8);
    REQUIRE(order.size() == 2u * 2 * 8);  // a forward and a backward of each microbatch in each chunk
    CHECK(order.front().forward);
    CHECK_FALSE(order.back().forward);
  }
  plan.pp_schedule = PipelineSchedule::one_f_one_b;
  plan.pp_virtual = 1;
  CHECK(stage_schedule(plan, 1, 8).size() == 2u * 8);  // another schedule, not the kept interleaved order
}
