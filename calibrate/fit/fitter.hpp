// `moesim fit`: measurement files + a base hardware profile -> the base profile with every field
// the measurements determine replaced by a "fitted" value (provenance: files, device, date,
// residual), validated by re-parsing it as a profile. Formulas: collective_fit.hpp and
// compute_fit.hpp; the workflow: calibrate/README.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/fit/fitted_fields.hpp"
#include "calibrate/fit/sequence_check.hpp"

namespace moesim::fit {

struct FitResult {
  nlohmann::ordered_json profile;  // key order of the base file kept
  std::vector<CurveReport> curves;
  std::vector<FieldUpdate> updates;
  std::vector<std::string> warnings;     // device and plausibility findings, for stderr
  std::vector<SequenceCheck> sequences;  // the harness's block sequences against the fitted profile
};

// Throws InputError for bad measurement files, a bad base profile, measurements of different
// devices, nothing to fit, or a fitted profile that does not validate.
FitResult fit_profile(const std::vector<std::string>& measurement_files, const std::string& base_profile,
                      const FitOptions& options);

// The table `moesim fit` prints: one row per curve with its model, residuals and target field, then the
// sequence check.
std::string format_fit_table(const FitResult& result);

}  // namespace moesim::fit
