// Renders a simulated step (StepResult) as a readable summary and as JSON. Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/input/composed_scenario.hpp"
#include "sim/step_simulation.hpp"

namespace moesim {

// The models a result was computed with, by kind (the scenario's `cost_models` choice).
nlohmann::json cost_models_json(const CostModelChoice& choice);
std::string cost_models_text(const CostModelChoice& choice);

nlohmann::json step_json(const Scenario& scenario, const StepResult& r);
// The fields a sweep's listing and CSV read, as step_json writes them (a subset of its keys).
nlohmann::json step_headline_json(const Scenario& scenario, const StepResult& r);
std::string step_table(const Scenario& scenario, const StepResult& r);

// One line ("basis    assumed in PROFILE, not measured: ...") naming the kernels that dominate a step
// whose rates the scenario's profile assumes; "" when every one is measured, published or fitted.
std::string kernel_basis_line(const Scenario& scenario);

}  // namespace moesim
