// Training stacks in reports: the line and JSON object naming a scenario's stack and the plan
// values taken from it, and `moesim list stacks` (every preset's values with their sources).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/stacks/stack_preset.hpp"
#include "studies/compare_stacks.hpp"

namespace moesim {

// "stack    olmo-core (allenai/OLMo-core ...): activations.loss=compiled, ..." or "" when none.
std::string stack_line(const StackUse& use);
// {"name", "code", "taken": [{"path", "value", "source"}]}.
nlohmann::json stack_json(const StackUse& use);

std::string stacks_table();

// `moesim compare --stack`: what each stack set, then each stack's step against the first's,
// phase by phase.
std::string stack_comparison_text(const StackComparison& comparison);
nlohmann::json stacks_json();

}  // namespace moesim
