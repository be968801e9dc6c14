// The plan section of a scenario, parsed and checked against the parsed architecture and
// hardware profile: compose() parses it with the other sections, with_plan_section() alone (a
// plan search's candidate on its base scenario). Internal to models/input.
#pragma once

#include <nlohmann/json.hpp>

#include "models/common/errors.hpp"
#include "models/input/scenario.hpp"
#include "models/input/section_memo.hpp"

namespace moesim {

// Parses `plan` (the plan section, from `origin`) into `s`, with its training stack's values
// under the keys it leaves unset; `memo`: the thread's recent plans, or null to parse afresh.
void read_plan_section(Scenario& s, const nlohmann::json& section, const SectionOrigin& origin,
                       SectionMemo<ParallelPlan>* memo);

// Checks the parsed plan of `s` against its architecture and hardware profile, and prices the
// kernels it names.
void check_plan_section(Scenario& s, const SectionOrigin& origin);

// Whether `path` is `prefix` or lies under it ("plan.x" and "plan[0]" under "plan").
bool starts_with_path(const std::string& path, const std::string& prefix);

// An error in a plan section from its own file, named from the scenario's top ("plan.x"), as
// compose names a path a change set: code's typed values (a plan search's candidate) are blamed
// on no change, yet its refusals are counted by path.
InputError from_the_top(const InputError& e, const SectionOrigin& plan);

}  // namespace moesim
