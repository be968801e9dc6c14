// One scenario under several training stacks (`moesim compare --stack A --stack B ...`): each
// point takes every value its stack sets for the plan's design, replacing the plan's own (the
// stack is what is compared), and the phases that differ from the first stack's step.
#pragma once

#include <string>
#include <vector>

#include "studies/plan_phases.hpp"
#include "studies/sweep.hpp"

namespace moesim {

struct StackComparison {
  std::vector<std::string> stacks;
  SweepResult points;  // one point per stack, in order
  // Point i against point 0 (empty for the first and for invalid points): `best_s` is point i's.
  std::vector<std::vector<PhaseDifference>> against_first;
};

// The overrides that put `stack` (a registered preset) on a plan of design word `design`.
PointOverrides stack_overrides(const std::string& stack, const std::string& design);

// `design`: the composed scenario's plan.design word.
StackComparison compare_stacks(const ScenarioSource& source, const std::string& design,
                               const std::vector<std::string>& stacks, int jobs);

}  // namespace moesim
