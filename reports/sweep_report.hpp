// Sweep and comparison documents: JSON (schema moesim-sweep/1, see reports/README.md) and CSV
// with stable headline columns. Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "studies/compare.hpp"
#include "studies/sweep.hpp"

namespace moesim {

nlohmann::json sweep_json(const std::string& scenario_name, const SweepSpec& spec, const SweepResult& result);
// One point as it appears in the document's "points" array.
nlohmann::json sweep_point_json(const SweepPoint& point);
// The document from points already rendered (e.g. gathered from several MPI ranks).
nlohmann::json sweep_document(const std::string& scenario_name, const SweepSpec& spec, nlohmann::json points);
// CSV (and the text table, reports/sweep_table.hpp) are rendered from the document, so every
// path writes the same bytes.
std::string sweep_csv(const nlohmann::json& document);

nlohmann::json compare_json(const std::string& scenario_name, const CompareResult& result);

}  // namespace moesim
