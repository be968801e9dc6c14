#include "calibrate/fit/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>

#include "calibrate/fit/measurements.hpp"

namespace moesim::fit {

namespace {
Spread residuals(const LineFit& f, const std::vector<double>& x, const std::vector<double>& t) {
  std::vector<double> model(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) model[i] = f.intercept + f.slope * x[i];
  return relative_spread(model, t);
}
}  // namespace

LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& t) {
  if (x.size() != t.size()) throw std::invalid_argument("fit_line_relative: x and t differ in length");
  const auto n = static_cast<Eigen::Index>(x.size());
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  if (n < 2 || *lo == *hi) throw std::invalid_argument("needs at least two distinct sizes");
  // Rows [1/t, x/t] . [a, b] = 1 (weights 1/t^2); x is scaled to [0, 1] so that the QR
  // solve is well conditioned when sizes span 1 KiB .. 4 GiB.
  const double scale = *hi;
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!(t[i] > 0) || !std::isfinite(t[i])) throw std::invalid_argument("times must be positive and finite");
    A(i, 0) = 1.0 / t[i];
    A(i, 1) = x[i] / scale / t[i];
  }
  const Eigen::Vector2d ab = A.colPivHouseholderQr().solve(y);
  LineFit f;
  f.points = static_cast<int>(n);
  f.intercept = ab(0);
  f.slope = ab(1) / scale;
  if (f.intercept < 0) {
    // A negative latency has no meaning: refit through the origin, b = sum(x/t) / sum((x/t)^2).
    const Eigen::VectorXd col = A.col(1);
    f.intercept = 0;
    f.slope = col.sum() / col.squaredNorm() / scale;
    f.intercept_clamped = true;
  }
  if (!(f.slope > 0)) throw std::invalid_argument("time does not grow with size: no bandwidth to fit");
  const Spread s = residuals(f, x, t);
  f.rms_rel = s.rms_rel;
  f.max_rel = s.max_rel;
  return f;
}

LineFit fit_latency_bandwidth(const std::vector<double>& x, const std::vector<double>& t) {
  // A tenth: either term then moves the other's fit by at most ~10% of its own error.
  constexpr double kRegimeRatio = 10;
  // Two rows determine a line; a third shows whether it is one.
  constexpr std::size_t kMinRegimeRows = 3;
  LineFit all = fit_line_relative(x, t);  // validates x and t
  const double smallest = *std::min_element(t.begin(), t.end());
  std::vector<double> bx, bt;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (t[i] >= kRegimeRatio * smallest) bx.push_back(x[i]), bt.push_back(t[i]);
  }
  if (bx.size() < kMinRegimeRows) return all;
  LineFit f;
  f.slope = fit_line_relative(bx, bt).slope;
  f.bandwidth_points = static_cast<int>(bx.size());
  f.points = static_cast<int>(x.size());
  std::vector<double> latencies;
  double num = 0, den = 0;  // the intercept alone, weights 1/t^2
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (f.slope * x[i] * kRegimeRatio <= t[i]) latencies.push_back(t[i] - f.slope * x[i]);
    num += (t[i] - f.slope * x[i]) / (t[i] * t[i]);
    den += 1 / (t[i] * t[i]);
  }
  f.latency_points = static_cast<int>(latencies.size());
  f.intercept = latencies.empty() ? num / den : median_of(latencies);
  if (f.intercept < 0) f.intercept = 0, f.intercept_clamped = true;
  const Spread s = residuals(f, x, t);
  f.rms_rel = s.rms_rel;
  f.max_rel = s.max_rel;
  return f;
}

Spread relative_spread(const std::vector<double>& values, const std::vector<double>& refs) {
  Spread s;
  if (values.empty()) return s;
  double sum2 = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double r = (values[i] - refs[i]) / refs[i];
    sum2 += r * r;
    s.max_rel = std::max(s.max_rel, std::fabs(r));
  }
  s.rms_rel = std::sqrt(sum2 / static_cast<double>(values.size()));
  return s;
}

}  // namespace moesim::fit
