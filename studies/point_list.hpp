// A sweep's points, made on demand from its axes: the Cartesian product (last axis fastest),
// then the extra points. It holds the axes' values, not the points, so a million-point sweep
// keeps kilobytes here instead of a (path, value) list per point (about 300 bytes each, 300 MB
// for the million), and a sweep's memory stays bounded by its points in flight.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "models/input/sweep_spec.hpp"

namespace moesim {

class PointList {
 public:
  PointList() = default;
  // Exactly these points (a comparison's designs).
  explicit PointList(std::vector<PointOverrides> points) : extra_(std::move(points)) {}
  // The product of `axes` (each with at least one value), then `extra`.
  PointList(std::vector<SweepAxis> axes, std::vector<PointOverrides> extra);

  std::size_t size() const { return product_ + extra_.size(); }
  // Point i's changes, in axis order; i < size().
  PointOverrides operator[](std::size_t i) const;

  const std::vector<SweepAxis>& axes() const { return axes_; }
  const std::vector<PointOverrides>& extra() const { return extra_; }

 private:
  std::vector<SweepAxis> axes_;
  std::size_t product_ = 0;  // points the axes make (0 without axes)
  std::vector<PointOverrides> extra_;
};

}  // namespace moesim
