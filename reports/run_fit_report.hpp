// Text tables and the JSON document of a run-level fit (`moesim fit runs`): the fitted fields, every
// run's metrics against the base and the fitted profile, leave-one-out cross-validation, and
// predictions of other runs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "studies/run_fit.hpp"

namespace moesim {

// A metric's value as the table shows it: MFU in %, times in ms, tokens/s whole, memory in GiB.
std::string metric_value_text(const std::string& metric, double value);

// Per field: base, fitted, range, whether it hit a bound or was left undetermined, sensitivity.
std::string fit_parameter_table(const RunFitResult& fit);

// One row per metric of each run: measured, `base_label` prediction and error, `fitted_label`
// prediction and error; then mean and max |error| per metric.
std::string prediction_table(const std::vector<MetricPrediction>& predictions, const std::string& base_label,
                             const std::string& fitted_label);
std::string error_summary(const std::vector<MetricErrors>& errors, const std::string& base_label,
                          const std::string& fitted_label);

// The whole listing `moesim fit runs` prints: parameters, residuals, leave-one-out, warnings last.
std::string run_fit_listing(const RunFitResult& fit, const std::string& runs_file);

// The same as a moesim-fit-runs/1 document (reports/schema/moesim-fit-runs.schema.json), with the
// runs of each --predict file (its name, its predictions) and every warning printed.
nlohmann::json run_fit_json(const RunFitResult& fit, const std::string& runs_file, const std::string& base_profile,
                            const std::vector<std::pair<std::string, RunPredictions>>& predicted,
                            const std::vector<std::string>& warnings);

}  // namespace moesim
