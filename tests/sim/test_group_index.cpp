#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "sim/group_index.hpp"

namespace moesim {
namespace {

struct PairKey {
  std::int64_t a = 0;
  std::int32_t b = 0;
  bool operator==(const PairKey&) const = default;
};

struct PairKeyHash {
  std::size_t operator()(const PairKey& k) const noexcept {
    return hash_fields({static_cast<std::uint64_t>(k.a), static_cast<std::uint64_t>(k.b)});
  }
};

// Adds keys (i, i % 7) for i < n, then looks every one up again; returns the groups in order.
std::vector<std::uint32_t> groups_of(GroupIndex<PairKey, PairKeyHash>& index, std::int64_t n, std::uint32_t& made) {
  std::vector<std::uint32_t> out;
  for (std::int64_t i = 0; i < n; ++i)
    out.push_back(index.find_or_add({i, static_cast<std::int32_t>(i % 7)}, [&] { return made++; }));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t again = index.find_or_add({i, static_cast<std::int32_t>(i % 7)}, [&] { return made++; });
    CHECK(again == out[static_cast<std::size_t>(i)]);
  }
  return out;
}

}  // namespace

TEST_CASE("Group index: each key gets one group, found again across growth, with or without a reservation") {
  constexpr std::int64_t kKeys = 5000;  // past several doublings of the 64-slot start
  GroupIndex<PairKey, PairKeyHash> grown, reserved;
  reserved.reserve(kKeys);
  std::uint32_t made_grown = 0, made_reserved = 0;
  const auto a = groups_of(grown, kKeys, made_grown);
  const auto b = groups_of(reserved, kKeys, made_reserved);
  CHECK(made_grown == kKeys);  // make() once per distinct key
  CHECK(made_reserved == kKeys);
  CHECK(a == b);
  for (std::int64_t i = 0; i < kKeys; ++i) CHECK(a[static_cast<std::size_t>(i)] == static_cast<std::uint32_t>(i));
  reserved.reserve(10);  // never shrinks: every key is still there
  std::uint32_t none = 0;
  CHECK(reserved.find_or_add({42, 0}, [&] { return ++none; }) == 42);
  CHECK(none == 0);
}

}  // namespace moesim
