// The plan search's document (schema moesim-plan/1, reports/schema/moesim-plan.schema.json),
// its CSV (one row per screened plan) and the terminal listing (counts, the top K, the best
// against the runner-up, the best of each design family). CSV and listing are rendered from the
// document, so every output says the same. Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "studies/plan_search.hpp"

namespace moesim {

nlohmann::json plan_json(const std::string& scenario_name, const PlanSearchResult& result);
std::string plan_csv(const nlohmann::json& document);
std::string plan_listing(const nlohmann::json& document);

}  // namespace moesim
