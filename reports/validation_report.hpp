// Predicted vs published, per record and in summary (mean and max absolute error per metric,
// OOM verdicts right/wrong). Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "studies/validation.hpp"

namespace moesim {

nlohmann::json validation_json(const ValidationReport& report);
std::string validation_table(const ValidationReport& report);
std::string sensitivity_table(const std::vector<SensitivityRow>& rows, double fraction);  // Markdown

}  // namespace moesim
