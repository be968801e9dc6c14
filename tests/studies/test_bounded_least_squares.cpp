// The bounded Levenberg-Marquardt behind `moesim fit runs` on residual functions whose answer is
// known by hand: it recovers the parameters, stays inside the bounds (and says when it ends on
// one), and keeps at their start values the parameters the residuals cannot see or tell apart.
#include <catch2/catch.hpp>

#include <cmath>

#include "studies/bounded_least_squares.hpp"

using namespace moesim;

namespace {

// Relative errors of y = a * x + b / x against data generated with (a, b) = (2, 30).
std::vector<double> curve_errors(const std::vector<double>& p) {
  std::vector<double> out;
  for (double x : {1.0, 2.0, 5.0, 10.0, 20.0}) {
    const double truth = 2 * x + 30 / x;
    out.push_back((p[0] * x + p[1] / x - truth) / truth);
  }
  return out;
}

}  // namespace

TEST_CASE("fit_bounded recovers two parameters from their residuals", "[unit]") {
  const BoundedFit fit = fit_bounded(curve_errors, {{"a", 0.5, 5.0, 1.0}, {"b", 0.0, 100.0, 10.0}});
  CHECK(fit.determined == std::vector<bool>{true, true});
  CHECK(fit.values[0] == Approx(2.0).epsilon(1e-4));
  CHECK(fit.values[1] == Approx(30.0).epsilon(1e-4));
  CHECK(fit.at_bound == std::vector<bool>{false, false});
  CHECK(fit.evaluations > 3);
}

TEST_CASE("fit_bounded stays inside the range and reports the bound it ends on", "[unit]") {
  // The data want a = 2, but a is bounded to [0.5, 1.5]: the best bounded fit sits at 1.5.
  const BoundedFit fit = fit_bounded(curve_errors, {{"a", 0.5, 1.5, 1.0}, {"b", 0.0, 100.0, 10.0}});
  CHECK(fit.values[0] <= 1.5);
  CHECK(fit.values[0] == Approx(1.5).margin(2e-3));
  CHECK(fit.at_bound[0]);
  CHECK_FALSE(fit.at_bound[1]);
}

TEST_CASE("fit_bounded keeps a parameter with no effect at its start value", "[unit]") {
  const auto errors = [](const std::vector<double>& p) {
    auto out = curve_errors(p);
    for (auto& e : out) e += 1e-6 * p[2];  // c moves nothing measurable
    return out;
  };
  const BoundedFit fit = fit_bounded(errors, {{"a", 0.5, 5.0, 1.0}, {"b", 0.0, 100.0, 10.0}, {"c", 0.0, 10.0, 4.0}});
  CHECK(fit.determined == std::vector<bool>{true, true, false});
  CHECK(fit.values[2] == 4.0);
  CHECK(fit.why_flat[2].find("whole range") != std::string::npos);
  CHECK(fit.values[0] == Approx(2.0).epsilon(1e-3));
}

TEST_CASE("fit_bounded keeps one of two parameters that act alike at its start value", "[unit]") {
  // y = (a + c) * x + b / x: only a + c is seen. The later one (c) is kept at its start.
  const auto errors = [](const std::vector<double>& p) { return curve_errors({p[0] + p[2], p[1]}); };
  const BoundedFit fit = fit_bounded(errors, {{"a", 0.0, 5.0, 1.0}, {"b", 0.0, 100.0, 10.0}, {"c", 0.0, 5.0, 0.5}});
  CHECK(fit.determined == std::vector<bool>{true, true, false});
  CHECK(fit.values[2] == 0.5);
  CHECK(fit.why_flat[2].find("as a does") != std::string::npos);
  CHECK(fit.values[0] + fit.values[2] == Approx(2.0).epsilon(1e-3));
}

TEST_CASE("fit_bounded keeps every parameter when fewer residuals than parameters see them", "[unit]") {
  // One residual, two parameters: the second direction is flat whatever the data.
  const auto one = [](const std::vector<double>& p) { return std::vector<double>{p[0] + 2 * p[1] - 3}; };
  const BoundedFit fit = fit_bounded(one, {{"a", 0.0, 5.0, 0.5}, {"b", 0.0, 5.0, 0.5}});
  CHECK((fit.determined[0] != fit.determined[1]));
  const std::size_t kept = fit.determined[0] ? 1 : 0;
  CHECK(fit.values[kept] == 0.5);
  CHECK(fit.values[0] + 2 * fit.values[1] == Approx(3.0).margin(1e-6));
}
