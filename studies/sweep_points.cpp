// The expansion of a sweep into points.
#include <algorithm>

#include "models/common/json_reader.hpp"
#include "studies/sweep.hpp"

namespace moesim {

bool set_axis(SweepSpec& spec, SweepAxis axis) {
  for (auto& a : spec.axes) {
    if (a.path == axis.path) {
      a = std::move(axis);
      return true;
    }
  }
  spec.axes.push_back(std::move(axis));
  return false;
}

namespace {

// Values in first-seen order, each once.
std::vector<nlohmann::json> distinct(const std::vector<nlohmann::json>& values) {
  std::vector<nlohmann::json> out;
  for (const auto& v : values)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

// Whether the product of `axes` already holds `p` (the same paths, each value on its axis).
bool in_product(const std::vector<SweepAxis>& axes, const PointOverrides& p) {
  if (axes.empty() || p.size() != axes.size()) return false;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (p[a].first != axes[a].path) return false;
    const auto& vs = axes[a].values;
    if (std::find(vs.begin(), vs.end(), p[a].second) == vs.end()) return false;
  }
  return true;
}

}  // namespace

std::vector<PointOverrides> expand_points(const ScenarioSource& source, const SweepSpec& given) {
  SweepSpec spec = given;
  for (auto& axis : spec.axes) axis.values = distinct(axis.values);
  double product = 1;
  for (const auto& axis : spec.axes) product *= static_cast<double>(axis.values.size());
  if (product + static_cast<double>(spec.include.size()) > static_cast<double>(kMaxSweepPoints)) {
    throw InputError("--vary", "",
                     "the axes make " + brief(product + static_cast<double>(spec.include.size())) +
                         " points; at most " + std::to_string(kMaxSweepPoints) +
                         " per sweep (split it, or use fewer values per axis)");
  }
  // Check every axis value against the base scenario first: a malformed value stops here.
  for (const auto& axis : spec.axes) {
    if (axis.values.empty()) throw InputError("--vary", axis.path, "empty value list");
    for (const auto& v : axis.values) {
      try {
        compose(source, changes_of(PointOverrides{{axis.path, v}}));
      } catch (const InputError& e) {
        if (!e.infeasible()) throw InputError(e.file(), e.path(), e.message() + " (sweep axis " + axis.path + ")");
      }
    }
  }
  std::vector<PointOverrides> points;
  if (!spec.axes.empty()) {
    std::vector<std::size_t> idx(spec.axes.size(), 0);
    while (true) {
      PointOverrides p;
      for (std::size_t a = 0; a < spec.axes.size(); ++a) p.emplace_back(spec.axes[a].path, spec.axes[a].values[idx[a]]);
      points.push_back(std::move(p));
      std::size_t a = spec.axes.size();
      while (a > 0 && ++idx[a - 1] == spec.axes[a - 1].values.size()) idx[--a] = 0;
      if (a == 0) break;
    }
  }
  const auto product_end = static_cast<std::ptrdiff_t>(points.size());
  for (const auto& p : spec.include) {
    if (in_product(spec.axes, p)) continue;
    if (std::find(points.begin() + product_end, points.end(), p) != points.end()) continue;
    points.push_back(p);
  }
  if (points.empty()) points.emplace_back();  // no axes: the scenario itself
  return points;
}

}  // namespace moesim
