// Where two replayed plans' step times differ, phase by phase, and the phase a plan spends most
// of its exposed time in: what the plan search's listing explains its choices with.
#pragma once

#include <string>
#include <vector>

#include "studies/sweep.hpp"

namespace moesim {

// Where the best plan's step is won against another's: the exposed time of each phase (and the
// idle time) on the two critical ranks, the largest differences first, equal ones left out.
struct PhaseDifference {
  std::string phase;  // a phase name, or "idle"
  double best_s = 0, runner_up_s = 0;
};

// The phases (and idle time) whose exposed seconds differ between the two points, the largest
// difference first.
std::vector<PhaseDifference> phase_differences(const SweepPoint& best_point, const SweepPoint& second_point);

// The phase (or "idle": pipeline bubble and waiting) the critical rank spends most of its exposed
// time in.
std::string largest_exposed(const StepResult& r);

// The same among what is not compute (communication phases and idle): what a plan waits for.
struct ExposedPhase {
  std::string phase;
  double s = 0;
};
ExposedPhase largest_exposed_non_compute(const StepResult& r);

// The place each of a ranking's entries (scores best first) takes: entries with an equal score
// share one (plans that differ only in axes that do not change the step: optimizer layouts),
// 1-based.
std::vector<std::size_t> shared_places(const std::vector<double>& scores);

}  // namespace moesim
