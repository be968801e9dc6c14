#include "sim/allocation_trace.hpp"

#include <mutex>
#include <unordered_map>

namespace moesim {

namespace {

// Two independent 64-bit digests of the record: FNV-1a over each word (the FNV-1a 64-bit offset
// basis and prime), and the sum of splitmix64's finalizer (Vigna's constants 0xbf58476d1ce4e5b9,
// 0x94d049bb133111eb) over each word offset by its position times the golden-ratio constant
// 0x9e3779b97f4a7c15; a wrong outcome would need both to collide at once. The second lane mixes
// each word on its own and only adds the results, so it does not lengthen FNV's chain of
// dependent multiplications (a record holds thousands of words, digested for every stage).
struct Digest {
  std::uint64_t a = 0, b = 0;
  bool operator==(const Digest&) const = default;
};

struct DigestHash {
  std::size_t operator()(const Digest& d) const {
    return static_cast<std::size_t>(d.a ^ (d.b * 0x9e3779b97f4a7c15ull));
  }
};

std::uint64_t splitmix64_finalizer(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Digest digest(const std::vector<AllocEvent>& events, bool expandable, std::uint64_t limit) {
  constexpr std::uint64_t kFnvOffset = 14695981039346656037ull, kFnvPrime = 1099511628211ull;
  constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  Digest d{kFnvOffset, 0};
  std::uint64_t position = 0;
  const auto mix = [&d, &position](std::uint64_t w) {
    d.a = (d.a ^ w) * kFnvPrime;
    d.b += splitmix64_finalizer(w + ++position * kGolden);
  };
  mix(expandable ? 1 : 0);
  mix(limit);
  mix(events.size());
  for (const AllocEvent& e : events) {
    mix(e.bytes);
    mix((static_cast<std::uint64_t>(e.id) << 8) | static_cast<std::uint64_t>(e.stream));
  }
  return d;
}

// Outcomes kept, forgotten all at once past this many (a search's distinct stage records number in
// the thousands; each entry is a few dozen bytes).
constexpr std::size_t kKeptOutcomes = 1 << 16;

}  // namespace

AllocatorOutcome run_allocator(const std::vector<AllocEvent>& events, bool expandable, std::uint64_t limit) {
  static std::mutex mutex;
  static std::unordered_map<Digest, AllocatorOutcome, DigestHash> kept;
  const Digest key = digest(events, expandable, limit);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = kept.find(key); it != kept.end()) return it->second;
  }
  thread_local CachingAllocator alloc(expandable, limit);  // its buffers serve the thread's next record
  alloc.reset(expandable, limit);
  for (const AllocEvent& e : events) {
    if (e.bytes > 0)
      alloc.allocate(e.id, e.bytes, e.stream);
    else
      alloc.release(e.id);
  }
  const AllocatorOutcome out{alloc.peaks(), alloc.failed(), alloc.shortfall()};
  const std::lock_guard<std::mutex> lock(mutex);
  if (kept.size() >= kKeptOutcomes) kept.clear();
  kept.emplace(key, out);
  return out;
}

}  // namespace moesim
