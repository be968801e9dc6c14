// Which collective group a key names, for the step emitter's matching of one call's members
// across simulated ranks. Open addressing in one flat array: a 4096-GPU pipeline step matches
// tens of thousands of keys, and a node-based map paid an allocation and a free for each
// (about 8% of such a simulation's instructions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace moesim {

// A key's hash from its fields (FNV-1a-style mixing of each, then the high bits folded into the
// low ones the table's mask keeps).
inline std::size_t hash_fields(std::initializer_list<std::uint64_t> fields) {
  std::uint64_t h = 0;
  for (const std::uint64_t x : fields) h = (h ^ x) * 0x100000001b3ULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

template <class Key, class Hash>
class GroupIndex {
 public:
  // Room for `keys` keys without regrowth (each growth rehashes every key so far).
  void reserve(std::size_t keys) {
    std::size_t size = slots_.empty() ? 64 : slots_.size();
    while (size < 2 * keys) size *= 2;
    if (size > slots_.size()) rehash(size);
  }

  // The group `key` names; a key seen for the first time gets `make()` (called once per key).
  template <class Make>
  std::uint32_t find_or_add(const Key& key, Make make) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    Slot& slot = probe(slots_, key);
    if (!slot.full) {
      slot = {key, make(), true};
      ++used_;
    }
    return slot.group;
  }

 private:
  struct Slot {
    Key key{};
    std::uint32_t group = 0;
    bool full = false;
  };

  // The slot holding `key`, or the empty one where it belongs (the table is never full).
  static Slot& probe(std::vector<Slot>& slots, const Key& key) {
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = Hash{}(key)&mask;; i = (i + 1) & mask) {
      if (!slots[i].full || slots[i].key == key) return slots[i];
    }
  }

  void grow() { rehash(slots_.empty() ? 64 : 2 * slots_.size()); }

  void rehash(std::size_t size) {
    std::vector<Slot> bigger(size);
    for (const Slot& s : slots_) {
      if (s.full) probe(bigger, s.key) = s;
    }
    slots_.swap(bigger);
  }

  std::vector<Slot> slots_;  // a power of two in size, at most half full
  std::size_t used_ = 0;
};

}  // namespace moesim
