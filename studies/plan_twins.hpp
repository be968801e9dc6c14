// Plan twins: candidates whose changes (candidate_changes) differ only at paths the step never reads (sim's
// memory_only_paths: the distributed optimizer's shard layout). A search evaluates a group
// of twins in one place: the first that composes gives the step-time bound and the replayed step,
// and each twin that sim's same_step confirms takes them with its own memory ledger
// (sim/step_simulation.hpp restate_memory); a twin it does not confirm is evaluated alone.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "studies/plan_space.hpp"

namespace moesim {

// Whether `path` is one of `paths`.
bool path_among(const std::vector<std::string>& paths, const std::string& path);
// `changes` without those at `paths`, in order.
PointOverrides changes_without(const PointOverrides& changes, const std::vector<std::string>& paths);

// The changes of `candidate` the step reads: its changes without the memory-only paths.
PointOverrides plan_step_key(const PlanCandidate& candidate);

// Positions into `members` (indices into `candidates`) grouped by step key: each group in the
// members' order, the groups in the order of their first members.
std::vector<std::vector<std::size_t>> twin_groups(const std::vector<PlanCandidate>& candidates,
                                                  const std::vector<std::size_t>& members);

}  // namespace moesim
