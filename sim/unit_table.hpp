// A value per model unit: -1 the embedding, 0..L-1 the blocks, L the final norm and LM head.
// Stored densely (units are few and all present), so a step's many look-ups index an array.
#pragma once

#include <cstdint>
#include <vector>

namespace moesim {

template <class T>
class UnitTable {
 public:
  UnitTable() = default;
  // Units -1..last_unit, each `fill`.
  explicit UnitTable(std::int64_t last_unit, T fill = T{}) : values_(static_cast<std::size_t>(last_unit + 2), fill) {}

  T& operator[](std::int64_t unit) { return values_[slot(unit)]; }
  const T& operator[](std::int64_t unit) const { return values_[slot(unit)]; }
  void fill(T v) { values_.assign(values_.size(), v); }
  // The values in unit order (-1 first).
  const std::vector<T>& values() const { return values_; }

 private:
  static std::size_t slot(std::int64_t unit) { return static_cast<std::size_t>(unit + 1); }
  std::vector<T> values_;
};

}  // namespace moesim
