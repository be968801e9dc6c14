// Weighted linear least squares for calibration curves (Eigen), and residual statistics.
#pragma once

#include <vector>

namespace moesim::fit {

// time = intercept + slope * x, fitted to minimise the sum of squared RELATIVE residuals
// ((model - t) / t)^2, i.e. weights 1/t^2: small sizes set the intercept (latency) and large
// sizes the slope (1 / bandwidth), each to its own relative precision.
struct LineFit {
  double intercept = 0;
  double slope = 0;
  double rms_rel = 0;  // root mean square of (model - t) / t over the points
  double max_rel = 0;  // largest |model - t| / t
  int points = 0;
  bool intercept_clamped = false;  // the free fit gave a negative intercept; refitted through 0
  int bandwidth_points = 0;        // fit_latency_bandwidth: rows the slope came from (0: one line)
  int latency_points = 0;          // rows the intercept came from (0: all rows, slope fixed)
};

// x and t: same length, at least two distinct x, every t > 0. Throws std::invalid_argument.
LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& t);

// A latency-bandwidth line whose two ends are each right. A full nccl-tests sweep (8 B .. GiB)
// crosses NCCL's protocols (LL, LL128, Simple): many small rows with a low latency and a low
// bandwidth, few large rows at the Simple bandwidth. One relative fit over all rows lets the many
// latency-bound rows pull the slope, so large-message bandwidth comes out low. Here:
// - the slope comes from the bandwidth-bound rows, those whose time is at least kRegimeRatio x the
//   sweep's smallest time (the latency is then at most 1/kRegimeRatio of their time), by the
//   relative fit above;
// - the intercept is the median of t - slope x over the latency-bound rows, those where the
//   bandwidth term is at most 1/kRegimeRatio of t; with none, the relative fit of the
//   intercept alone over every row;
// - a sweep with fewer than kMinRegimeRows bandwidth-bound rows spans one regime: one relative
//   line over every row.
// rms_rel and max_rel are over every row.
LineFit fit_latency_bandwidth(const std::vector<double>& x, const std::vector<double>& t);

// Relative spread of values around a reference value each: rms and max of (v - ref) / ref.
struct Spread {
  double rms_rel = 0;
  double max_rel = 0;
};
Spread relative_spread(const std::vector<double>& values, const std::vector<double>& references);

}  // namespace moesim::fit
