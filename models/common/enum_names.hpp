// One table of (value, name) pairs per enum serves both directions: the name a report prints
// and the value a parser reads. An unknown name is an UnknownNameError that lists the valid ones
// with the closest as a suggestion.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moesim {

// "unknown <what> \"<name>\"; did you mean ...? valid: a, b, c".
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view name,
                                     const std::vector<std::string>& valid);

template <class E, std::size_t N>
class EnumNames {
 public:
  using Entry = std::pair<E, std::string_view>;
  constexpr EnumNames(std::string_view what, std::array<Entry, N> entries) : what_(what), entries_(entries) {}

  constexpr std::string_view name(E value) const {
    for (const auto& [v, text] : entries_) {
      if (v == value) return text;
    }
    return "?";
  }
  constexpr bool has(std::string_view name) const {
    for (const auto& [v, text] : entries_) {
      if (text == name) return true;
    }
    return false;
  }
  E parse(std::string_view name) const {
    for (const auto& [v, text] : entries_) {
      if (text == name) return v;
    }
    throw_unknown_name(what_, name, names());
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.emplace_back(entry.second);
    return out;
  }
  constexpr const std::array<Entry, N>& entries() const { return entries_; }
  constexpr std::string_view what() const { return what_; }

 private:
  std::string_view what_;
  std::array<Entry, N> entries_;
};

// A set of an enum's values (fewer than 32 of them): a plan's list of modules, say.
template <class E>
struct EnumSet {
  std::uint32_t bits = 0;
  bool empty() const { return bits == 0; }
  bool has(E m) const { return (bits >> static_cast<unsigned>(m)) & 1u; }
  void add(E m) { bits |= 1u << static_cast<unsigned>(m); }
  bool operator==(const EnumSet&) const = default;
};

}  // namespace moesim
