// Step-time calibration from measured runs (`moesim fit runs`, DESIGN.md "Calibration: two honest
// tiers"): the free fittable fields (studies/fittable_fields.hpp) are moved, within their physical
// ranges, to minimise the squared relative errors of every measured metric of every run, each
// prediction a full replay. Bounded Levenberg-Marquardt (Eigen's unsupported LevenbergMarquardt,
// the MINUIT sine transform for the bounds); a field the data cannot determine (no effect, or an
// effect no different from another free field's) is reported and kept at its base value. Leave-one-
// out cross-validation always comes with the fit: each run predicted by a fit that did not see it.
#pragma once

#include <string>
#include <vector>

#include "studies/fittable_fields.hpp"
#include "studies/measured_runs.hpp"

namespace moesim {

struct FittedParameter {
  const FittableField* field = nullptr;
  double base = 0;
  double fitted = 0;        // == base when not determined
  bool determined = false;  // false: a flat direction, kept at its base value
  bool at_bound = false;    // the fit ended within 0.1% of the range from a bound
  double sensitivity = 0;   // largest |change of a relative error| over the whole range
  std::string why_flat;     // why it was not determined ("" when it was)
};

// One measured metric of one run against its predictions.
struct MetricPrediction {
  std::string run;  // the run's id
  std::string metric;
  double measured = 0;
  double base = 0;       // predicted with the base profile
  double predicted = 0;  // with the fitted values (LOO: by the fit that left the run out)
  double error() const { return (predicted - measured) / measured; }
  double base_error() const { return (base - measured) / measured; }
};

// Mean and max |relative error| of one metric over a set of predictions.
struct MetricErrors {
  std::string metric;
  std::size_t count = 0;
  double mean_abs = 0, max_abs = 0;            // fitted (LOO) errors
  double base_mean_abs = 0, base_max_abs = 0;  // the base profile's
};

struct LeaveOneOut {
  bool possible = false;  // needs at least two runs
  std::vector<MetricPrediction> predictions;
  std::vector<MetricErrors> errors;
  std::vector<std::string> warnings;  // runs predicted outside the range of the runs fitted
};

struct RunFitResult {
  std::vector<FittedParameter> parameters;
  std::vector<MetricPrediction> residuals;  // every run, base and fitted
  std::vector<MetricErrors> errors;         // over the fitted runs
  double rms_rel = 0, max_rel = 0;          // fitted residuals over every metric of every run
  int points = 0;
  int evaluations = 0;  // replays of the whole run set
  LeaveOneOut loo;
  std::vector<std::string> warnings;  // flat directions, bounds hit
};

// Throws InputError for an unknown --free name (origin "--free"), a field named twice, or more
// free fields than runs (naming the runs file).
RunFitResult fit_runs(const RunsFile& runs, const std::vector<std::string>& free);

// The runs of `targets` predicted with the base profile and with the fit's values (the fit's
// base and fitted numbers), and warnings for those outside the range of `fitted_on`'s runs.
struct RunPredictions {
  std::vector<MetricPrediction> predictions;
  std::vector<MetricErrors> errors;
  std::vector<std::string> warnings;
};
RunPredictions predict_runs(const RunsFile& targets, const RunsFile& fitted_on,
                            const std::vector<FittedParameter>& parameters);

// The changes that set each parameter to its fitted value (its base value when `base`).
std::vector<ScenarioChange> parameter_changes(const std::vector<FittedParameter>& parameters, bool base);

// Mean and max |relative error| per metric, metrics in order of first appearance.
std::vector<MetricErrors> metric_errors(const std::vector<MetricPrediction>& predictions);

// "run X (ddp+ep8, 8 GPUs, 128 experts) lies outside the fitted runs: design ddp+ep8 not among
// ddp, fsdp; ..." for each way `target` extrapolates from `fitted`; empty when it does not.
std::vector<std::string> extrapolation(const MeasuredRun& target, const std::vector<const MeasuredRun*>& fitted);

}  // namespace moesim
