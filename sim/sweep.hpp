// Sweeps: the Cartesian product of axes (plus explicitly included points), each point loaded
// with its overrides and simulated with the full replay and ledger, on a pool of threads. The
// result is indexed by point, so it is the same whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"

namespace moesim {

// A sweep keeps every point's scenario and result in memory (tens of KiB each), so a million
// points is the most one process takes; MPI ranks split a sweep, not this limit.
constexpr std::size_t kMaxSweepPoints = 1'000'000;

struct SweepAxis {
  std::string path;
  std::vector<nlohmann::json> values;
};

using PointOverrides = std::vector<std::pair<std::string, nlohmann::json>>;

struct SweepSpec {
  std::vector<SweepAxis> axes;
  std::vector<PointOverrides> include;  // extra points after the product
};

// "PATH=V1,V2,..." where a value is JSON, a bare word, a size (128Ki, 4Mi, 8K) or a range
// A..B (doubling) or A..B+S (step S). Throws InputError (file "--vary") when malformed.
SweepAxis parse_axis(const std::string& expr);
// The scenario's own "sweep" block: {"axes": [{"path", "values" | "range"}], "include": [{path: value}]}.
SweepSpec sweep_spec_of(const Scenario& scenario);

struct SweepPoint {
  std::size_t index = 0;
  PointOverrides values;
  bool ok = false;
  std::string error;  // why the point is an impossible plan
  std::optional<Scenario> scenario;
  std::optional<StepResult> result;
};

struct SweepResult {
  std::vector<SweepPoint> points;
};

using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

// Every point's overrides. Malformed axes (a missing path, an empty value list, a value of
// the wrong type) throw InputError before any point runs; an impossible plan at one point is
// recorded in that point and the sweep goes on.
std::vector<PointOverrides> expand_points(const std::string& scenario_file, const std::vector<std::string>& sets,
                                          const SweepSpec& spec);
SweepResult run_points(const std::string& scenario_file, const std::vector<std::string>& sets,
                       const std::vector<PointOverrides>& points, std::size_t first, std::size_t count, int jobs,
                       const SweepProgress& progress);

std::string override_text(const std::string& path, const nlohmann::json& value);

}  // namespace moesim
