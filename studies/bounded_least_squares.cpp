#include "studies/bounded_least_squares.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>
#include <unsupported/Eigen/LevenbergMarquardt>

namespace moesim {

namespace {

// Jacobian step for the flat-direction test: 1% of the range, large enough to step over the
// replay's small kinks (a collective becoming exposed), small enough to stay local.
constexpr double kProbeFraction = 1e-2;
// Step in the transformed variable u for the solver's forward differences: 0.01 rad moves a
// mid-range parameter by 0.5% of its range (same reasoning).
constexpr double kSolverStep = 1e-2;
// Start at least this far inside the range: at a bound the sine transform's derivative is zero.
constexpr double kInterior = 0.02;
// Residual-function calls the solver may spend (each one replays every run).
constexpr int kMaxSolverEvaluations = 40;

Eigen::VectorXd as_vector(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size()));
}

// The fit in the transformed variables of the determined parameters; the others stay at start.
struct TransformedProblem : Eigen::DenseFunctor<double> {
  TransformedProblem(const ResidualFunction& f, const std::vector<BoundedParameter>& p, std::vector<std::size_t> free,
                     int values, int& evaluations)
      : DenseFunctor(static_cast<int>(free.size()), values),
        residuals(f),
        parameters(p),
        free_index(std::move(free)),
        calls(evaluations) {}

  std::vector<double> physical(const InputType& u) const {
    std::vector<double> x;
    for (const auto& p : parameters) x.push_back(p.start);
    for (std::size_t k = 0; k < free_index.size(); ++k) {
      const auto& p = parameters[free_index[k]];
      x[free_index[k]] = p.lower + (p.upper - p.lower) * (1 + std::sin(u[static_cast<Eigen::Index>(k)])) / 2;
    }
    return x;
  }
  int operator()(const InputType& u, ValueType& out) const {
    ++calls;
    out = as_vector(residuals(physical(u)));
    return 0;
  }
  int df(const InputType& u, JacobianType& jacobian) const {
    ValueType at, moved;
    (*this)(u, at);
    jacobian.resize(values(), inputs());
    for (Eigen::Index k = 0; k < inputs(); ++k) {
      InputType step = u;
      step[k] += kSolverStep;
      (*this)(step, moved);
      jacobian.col(k) = (moved - at) / kSolverStep;
    }
    return 0;
  }

  const ResidualFunction& residuals;
  const std::vector<BoundedParameter>& parameters;
  std::vector<std::size_t> free_index;
  int& calls;
};

// Columns: the change of every residual when a parameter moves over its whole range (linear
// estimate from a step of kProbeFraction of it, toward the inside).
Eigen::MatrixXd range_jacobian(const ResidualFunction& f, const std::vector<BoundedParameter>& p,
                               const Eigen::VectorXd& at, int& evaluations) {
  Eigen::MatrixXd j(at.size(), static_cast<Eigen::Index>(p.size()));
  for (std::size_t k = 0; k < p.size(); ++k) {
    std::vector<double> x;
    for (const auto& q : p) x.push_back(q.start);
    const double step = kProbeFraction * (p[k].upper - p[k].lower);
    const double sign = x[k] + step <= p[k].upper ? 1.0 : -1.0;
    x[k] += sign * step;
    ++evaluations;
    j.col(static_cast<Eigen::Index>(k)) = sign * (as_vector(f(x)) - at) / kProbeFraction;
  }
  return j;
}

// Marks the parameters the Jacobian cannot tell apart: no effect, then collinear columns (the
// one with the largest share of the weakest direction goes, the first named keeps its place).
void find_flat_directions(const Eigen::MatrixXd& j, const std::vector<BoundedParameter>& p, BoundedFit& fit) {
  std::vector<std::size_t> kept;
  for (std::size_t k = 0; k < p.size(); ++k) {
    fit.sensitivity[k] = j.col(static_cast<Eigen::Index>(k)).cwiseAbs().maxCoeff();
    if (fit.sensitivity[k] < kFlatEffect) {
      fit.determined[k] = false;
      fit.why_flat[k] = "no measured metric moves by 0.1% over its whole range";
    } else {
      kept.push_back(k);
    }
  }
  while (kept.size() > 1) {
    Eigen::MatrixXd normalised(j.rows(), static_cast<Eigen::Index>(kept.size()));
    for (std::size_t c = 0; c < kept.size(); ++c) {
      const auto col = j.col(static_cast<Eigen::Index>(kept[c]));
      normalised.col(static_cast<Eigen::Index>(c)) = col / col.norm();
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(normalised.transpose() * normalised);
    const Eigen::VectorXd lambda = eig.eigenvalues().cwiseMax(0.0);  // ascending
    if (std::sqrt(lambda[0] / lambda[lambda.size() - 1]) >= kCollinearRatio) break;
    const Eigen::VectorXd weakest = eig.eigenvectors().col(0).cwiseAbs();
    Eigen::Index drop = 0;
    for (Eigen::Index c = 0; c < weakest.size(); ++c) {
      if (weakest[c] >= weakest[drop] - 1e-12) drop = c;  // ties: the later in --free order goes
    }
    Eigen::Index partner = drop == 0 ? 1 : 0;
    for (Eigen::Index c = 0; c < weakest.size(); ++c) {
      if (c != drop && weakest[c] > weakest[partner]) partner = c;
    }
    const std::size_t gone = kept[static_cast<std::size_t>(drop)];
    fit.determined[gone] = false;
    fit.why_flat[gone] = "moves the predictions as " + p[kept[static_cast<std::size_t>(partner)]].name +
                         " does: the runs cannot tell the two apart";
    kept.erase(kept.begin() + drop);
  }
}

}  // namespace

BoundedFit fit_bounded(const ResidualFunction& residuals, const std::vector<BoundedParameter>& parameters) {
  BoundedFit fit;
  const std::size_t n = parameters.size();
  fit.values.resize(n);
  fit.determined.assign(n, true);
  fit.at_bound.assign(n, false);
  fit.sensitivity.assign(n, 0.0);
  fit.why_flat.assign(n, "");
  for (std::size_t k = 0; k < n; ++k) fit.values[k] = parameters[k].start;
  std::vector<double> start(fit.values);
  ++fit.evaluations;
  const Eigen::VectorXd at_start = as_vector(residuals(start));
  find_flat_directions(range_jacobian(residuals, parameters, at_start, fit.evaluations), parameters, fit);
  std::vector<std::size_t> free;
  for (std::size_t k = 0; k < n; ++k) {
    if (fit.determined[k]) free.push_back(k);
  }
  if (free.empty()) return fit;
  TransformedProblem problem(residuals, parameters, free, static_cast<int>(at_start.size()), fit.evaluations);
  Eigen::VectorXd u(static_cast<Eigen::Index>(free.size()));
  for (std::size_t k = 0; k < free.size(); ++k) {
    const auto& p = parameters[free[k]];
    const double s = std::clamp((p.start - p.lower) / (p.upper - p.lower), kInterior, 1 - kInterior);
    u[static_cast<Eigen::Index>(k)] = std::asin(2 * s - 1);
  }
  Eigen::LevenbergMarquardt<TransformedProblem> solver(problem);
  solver.setMaxfev(kMaxSolverEvaluations);
  solver.setXtol(1e-6);
  solver.setFtol(1e-8);
  solver.minimize(u);
  const std::vector<double> fitted = problem.physical(u);
  for (std::size_t k : free) {
    const auto& p = parameters[k];
    fit.values[k] = fitted[k];
    const double s = (fitted[k] - p.lower) / (p.upper - p.lower);
    fit.at_bound[k] = s < kBoundFraction || s > 1 - kBoundFraction;
  }
  return fit;
}

}  // namespace moesim
