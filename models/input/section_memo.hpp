// Sections a thread parsed lately, found again by their JSON. A sweep or a design comparison
// composes point after point from the changes its user wrote as paths, and a point's
// architecture or plan section is often one the thread has parsed already (the 576-point Figure 8
// sweep has 32 architectures and 18 plans: without the memo it runs about 8% longer), and a parse
// depends on nothing but the section's JSON and where it came from (the file and path its errors
// name). Only parses that succeed are kept: a section that fails throws every time. (A plan
// search's candidate does not come here: its typed values are written into its own plan section,
// parsed alone on its base's parsed architecture and profile: plan_section.hpp.)
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

template <class Parsed>
class SectionMemo {
 public:
  // The sections kept, the oldest replaced first: enough for the distinct plans a sweep's faster
  // axes make (designs x batches, accumulation steps), few enough that what a thread keeps stays
  // bounded and a look-up stays a short scan of hashes.
  static constexpr std::size_t kKept = 32;

  // The parse of `section` from `file` at `prefix`: `parse()` on a miss.
  template <class Parse>
  const Parsed& get(const nlohmann::json& section, const std::string& file, const std::string& prefix, Parse&& parse) {
    const std::size_t hash = std::hash<nlohmann::json>{}(section);
    for (const Entry& e : entries_) {
      if (e.hash == hash && same(e.section, section) && e.file == file && e.prefix == prefix) return e.parsed;
    }
    Entry fresh{hash, section, file, prefix, parse()};
    if (entries_.size() < kKept) return entries_.emplace_back(std::move(fresh)).parsed;
    Entry& slot = entries_[oldest_];
    oldest_ = (oldest_ + 1) % kKept;
    slot = std::move(fresh);
    return slot.parsed;
  }

 private:
  // Equal in value and in type: nlohmann's == takes 8 and 8.0 for equal, and a parse may accept
  // one and refuse the other (an integer field).
  static bool same(const nlohmann::json& a, const nlohmann::json& b) {
    if (a.type() != b.type() || a.size() != b.size()) return false;
    if (a.is_object()) {
      for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
        if (x.key() != y.key() || !same(x.value(), y.value())) return false;
      return true;
    }
    if (a.is_array()) {
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
      return true;
    }
    return a == b;
  }

  struct Entry {
    std::size_t hash;
    nlohmann::json section;
    std::string file, prefix;
    Parsed parsed;
  };
  std::vector<Entry> entries_;
  std::size_t oldest_ = 0;
};

}  // namespace moesim
