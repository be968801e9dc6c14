// What a scenario asks of many replays, read at parse time into typed values: sweep axes (the
// scenario's "sweep" block and --vary), explicitly included points, and the designs a
// comparison puts side by side (its "compare" block). studies/ runs them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

class JsonReader;

// A sweep streams its points and makes them on demand, but `--html` keeps every point's scenario
// and result (tens of KiB each) for its charts, so a million points is the most one process
// takes; MPI ranks split a sweep, not this limit.
constexpr std::size_t kMaxSweepPoints = 1'000'000;

struct SweepAxis {
  std::string path;
  std::vector<nlohmann::json> values;
};

// One point's changes to the scenario, as (path, value) pairs in axis order.
using PointOverrides = std::vector<std::pair<std::string, nlohmann::json>>;

struct SweepSpec {
  std::vector<SweepAxis> axes;
  std::vector<PointOverrides> include;  // extra points after the product
};

struct CompareSpec {
  std::vector<std::string> designs;  // short design names (design_spec.hpp), e.g. "ddp+ep8"
};

// "PATH=V1,V2,..." where a value is JSON, a bare word, a size (128Ki, 4Mi, 8K) or a range
// A..B (doubling) or A..B+S (step S). Throws InputError (file "--vary") when malformed.
SweepAxis parse_axis(const std::string& expr);

// The scenario's blocks: {"axes": [{"path", "values" | "range"}], "include": [{path: value}]} and
// {"designs": ["ddp", ...]}.
SweepSpec parse_sweep_block(const JsonReader& block, const nlohmann::json& raw);
CompareSpec parse_compare_block(const JsonReader& block, const nlohmann::json& raw);

// "PATH=VALUE" with the value as JSON text.
std::string override_text(const std::string& path, const nlohmann::json& value);

}  // namespace moesim
