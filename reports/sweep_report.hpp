// Sweep and comparison documents: JSON (schema moesim-sweep/1, see reports/README.md) and CSV
// with stable headline columns. Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/compare.hpp"
#include "sim/sweep.hpp"

namespace moesim {

nlohmann::json sweep_json(const std::string& scenario_name, const SweepSpec& spec, const SweepResult& result);
std::string sweep_csv(const SweepResult& result);
std::string sweep_table(const SweepResult& result);

nlohmann::json compare_json(const std::string& scenario_name, const CompareResult& result);
std::string compare_table(const CompareResult& result);

}  // namespace moesim
