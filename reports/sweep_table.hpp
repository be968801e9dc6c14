// The terminal listings of sweeps and comparisons: one row per point under a header, the
// invalid points' reasons below it, and a summary (counts, best fitting point). Observers only:
// rendered from the same document the JSON and CSV come from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "studies/compare.hpp"

namespace moesim {

std::string sweep_table(const nlohmann::json& document);
std::string compare_table(const CompareResult& result);

}  // namespace moesim
