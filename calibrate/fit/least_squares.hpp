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
};

// x and t: same length, at least two distinct x, every t > 0. Throws std::invalid_argument.
LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& t);

// Relative spread of values around a reference value each: rms and max of (v - ref) / ref.
struct Spread {
  double rms_rel = 0;
  double max_rel = 0;
};
Spread relative_spread(const std::vector<double>& values, const std::vector<double>& references);

}  // namespace moesim::fit
