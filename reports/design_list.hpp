// `moesim list designs`: every registered design (models/plan/designs/) with the word and parts
// that choose it, its planner families, the parameter-sync strategy that places its tasks and
// its one-line description.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace moesim {

std::string designs_table();
nlohmann::json designs_json();

}  // namespace moesim
