// Published measurements beside simulated points: the records of the validation datasets
// (scenarios/validation/*.json, the ones `moesim validate` checks) matched to the points of a
// sweep by the inputs they describe, so a report can draw each measurement next to the point
// that simulates the same run. Nothing is simulated here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

struct PublishedMeasurement {
  std::string id;         // the record's id, e.g. fig8a-ddp-4Mi
  std::string dataset;    // the file it came from
  std::string source;     // the figure or table, as the record cites it
  std::string known_gap;  // the record's documented gap ("" when none)
  std::size_t point = 0;  // index of the sweep point whose inputs are the record's
  std::optional<double> mfu;
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> peak_allocated_GiB;  // the largest rank's (a per-stage list gives its largest)
  std::optional<bool> oom;
  std::optional<double> mfu_min, mfu_max;  // a published band over several points (step_range)
};

struct PublishedOverlay {
  std::vector<std::string> datasets;  // the datasets read
  std::vector<PublishedMeasurement> measurements;
};

// The records of `datasets` whose run is one of the sweep's `points` (a moesim-sweep/1 "points"
// array): same resolved architecture, plan and hardware (the point's result "inputs") and the
// same FLOP convention, so MFU is counted alike. A record that sweeps a path gives one entry
// per value. Records of other kinds (bytes, layouts, schedules) and records whose plan is
// impossible have no point and are left out. Throws InputError for a malformed dataset.
PublishedOverlay published_measurements(const std::vector<std::string>& datasets, const nlohmann::json& points);

// The same with the datasets `moesim validate` reads by default (default_validation_datasets()),
// taken from the nearest folder above `scenario_file` that holds them: the repository of a
// bundled scenario, whatever the working folder. None when no folder above it has them.
PublishedOverlay published_for_scenario(const std::string& scenario_file, const nlohmann::json& points);

// The same matching one point at a time, as a sweep produces them: each point is read while it
// still holds its resolved inputs, which the sweep may then drop (a summary document).
class PublishedMatcher {
 public:
  // The records of `datasets`, named as given (published_measurements).
  explicit PublishedMatcher(const std::vector<std::string>& datasets);
  // The default datasets near `scenario_file`, named as `moesim validate` names them
  // (published_for_scenario).
  explicit PublishedMatcher(const std::string& scenario_file);
  ~PublishedMatcher();
  PublishedMatcher(const PublishedMatcher&) = delete;
  PublishedMatcher& operator=(const PublishedMatcher&) = delete;
  void add(const nlohmann::json& point);
  // The measurements in published_measurements' order: by dataset record, then by point.
  PublishedOverlay overlay() const;

 private:
  struct Run;
  std::vector<Run> runs_;
  std::vector<std::pair<std::size_t, PublishedMeasurement>> found_;  // (run index, measurement)
  std::vector<std::string> datasets_;
  bool shown_names_ = false;
};

}  // namespace moesim
