// What a sweep's points add up to: how many fit, ran out of memory or were invalid, and the best
// fitting point by MFU (the first of equals). Fed one point at a time in point order, so a
// streamed sweep keeps only this however many points it runs; the listing renders it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "studies/sweep.hpp"

namespace moesim {

struct SweepBest {
  std::size_t index = 0;
  PointOverrides values;
  std::string design;
  double mfu = 0;
  double tokens_per_s_per_gpu = 0;
};

class SweepTally {
 public:
  void add(const SweepPoint& point);
  // The tally of the points after these (an MPI rank's later slice).
  void merge(const SweepTally& later);

  std::size_t points = 0, fit = 0, oom = 0, invalid = 0;
  std::optional<SweepBest> best;
};

SweepTally tally_of(const std::vector<SweepPoint>& points);

// A tally sent between MPI ranks.
nlohmann::json tally_json(const SweepTally& tally);
SweepTally tally_from_json(const nlohmann::json& j);

}  // namespace moesim
