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

PointList::PointList(std::vector<SweepAxis> axes, std::vector<PointOverrides> extra)
    : axes_(std::move(axes)), extra_(std::move(extra)) {
  if (axes_.empty()) return;
  product_ = 1;
  for (const auto& axis : axes_) product_ *= axis.values.size();
}

PointOverrides PointList::operator[](std::size_t i) const {
  if (i >= product_) return extra_.at(i - product_);
  // Mixed radix, the last axis the fastest digit.
  PointOverrides p(axes_.size());
  for (std::size_t a = axes_.size(); a-- > 0;) {
    const auto& values = axes_[a].values;
    p[a] = {axes_[a].path, values[i % values.size()]};
    i /= values.size();
  }
  return p;
}

PointList expand_points(const ScenarioSource& source, const SweepSpec& given) {
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
  std::vector<PointOverrides> extra;
  for (const auto& p : spec.include) {
    if (in_product(spec.axes, p)) continue;
    if (std::find(extra.begin(), extra.end(), p) != extra.end()) continue;
    extra.push_back(p);
  }
  if (spec.axes.empty() && extra.empty()) extra.emplace_back();  // no axes: the scenario itself
  return PointList(std::move(spec.axes), std::move(extra));
}

}  // namespace moesim
