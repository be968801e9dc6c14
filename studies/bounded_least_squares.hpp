// Bounded nonlinear least squares for run-level calibration: Eigen's Levenberg-Marquardt
// (unsupported/Eigen/LevenbergMarquardt, MINPACK's lmder) over parameters kept inside their ranges
// by the MINUIT sine transform x = lo + (hi - lo)(1 + sin u) / 2 (F. James, MINUIT Reference
// Manual, "parameter limits"): every trial the replay sees is a valid profile, which a projection
// onto the box would also give but with a Jacobian that is wrong at the faces. Before solving,
// directions the residuals cannot see are found from the Jacobian at the start (a column with no
// effect over the whole range, or columns collinear with another's) and those parameters are kept
// at their start values, never moved arbitrarily.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace moesim {

struct BoundedParameter {
  std::string name;
  double lower = 0;
  double upper = 0;
  double start = 0;  // the base value, inside [lower, upper]
};

struct BoundedFit {
  std::vector<double> values;         // fitted; the start value where not determined
  std::vector<bool> determined;       // false: a flat direction
  std::vector<bool> at_bound;         // within kBoundFraction of the range from a bound
  std::vector<double> sensitivity;    // largest |residual change| when moved over its whole range (linear)
  std::vector<std::string> why_flat;  // "" when determined
  int evaluations = 0;                // residual-function calls
};

// The residuals at the given parameter values (one per measured metric, relative errors).
using ResidualFunction = std::function<std::vector<double>(const std::vector<double>&)>;

// A parameter whose whole range moves no residual by this much is not seen by the data: 0.1% is
// below the run-to-run spread trainers log (step times vary by ~1% between steps).
inline constexpr double kFlatEffect = 1e-3;
// Two parameters whose normalised Jacobian columns leave a singular value under this fraction of
// the largest (correlation above 0.9998) move the predictions the same way: only one is kept.
inline constexpr double kCollinearRatio = 1e-2;
// A fitted value this close to a bound (fraction of the range) is reported as at the bound.
inline constexpr double kBoundFraction = 1e-3;

BoundedFit fit_bounded(const ResidualFunction& residuals, const std::vector<BoundedParameter>& parameters);

}  // namespace moesim
