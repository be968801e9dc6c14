// Renders a simulated step (StepResult) as a readable summary and as JSON. Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"

namespace moesim {

nlohmann::json step_json(const Scenario& scenario, const StepResult& r);
std::string step_table(const Scenario& scenario, const StepResult& r);

}  // namespace moesim
