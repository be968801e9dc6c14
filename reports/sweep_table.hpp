// The terminal listings of sweeps and comparisons: one row per point under a header, the
// invalid points' reasons below it, and the sweep's tally (counts, best fitting point:
// studies/sweep_tally.hpp). Observers only: rendered from the same point documents the JSON and
// CSV come from, one point at a time, so a streamed sweep lists as it runs and keeps at most
// kListedPoints rows.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/input/sweep_spec.hpp"
#include "reports/text_table.hpp"
#include "studies/compare.hpp"
#include "studies/point_list.hpp"
#include "studies/sweep_tally.hpp"

namespace moesim {

// A listing is for reading: past this many rows the CSV and JSON hold the points, and the
// listing's memory stays bounded however large the sweep (the counts and the best point still
// cover every point).
inline constexpr std::size_t kListedPoints = 1000;

class SweepListing {
 public:
  // Columns: the axes' paths in order, then any other path a scanned point sets.
  explicit SweepListing(const nlohmann::json& axes);
  // Every point's values, before the first add(): they fix the columns and their alignment.
  void scan(const PointOverrides& values);
  // The same for all of a sweep's points, read off its axes' values and extra points (a point
  // sets nothing its axes and extras do not), not point by point.
  void scan(const PointList& points);
  void scan_json(const nlohmann::json& values);
  // One point document (sweep_point_json), in point order.
  void add(const nlohmann::json& point);
  // The rows, the invalid points' reasons and the tally of the same points.
  std::string render(const SweepTally& tally) const;

 private:
  void note_value(const std::string& path, const nlohmann::json& value);
  std::string label(std::size_t index, const PointOverrides& values) const;
  void start_table();

  std::vector<std::string> paths_;
  std::map<std::string, bool> numeric_;
  bool design_axis_ = false;
  std::size_t column_count_ = 0;
  std::optional<TextTable> table_;
  std::vector<std::string> invalid_;  // the first kListedPoints reasons
  std::size_t rows_ = 0;              // points added
};

// The listing of a whole sweep document (every point scanned, then added).
SweepListing listing_of(const nlohmann::json& document);
// A comparison's findings below its designs' listing: the batch crossovers and expert walls.
std::string compare_findings(const CompareResult& result);

}  // namespace moesim
