#include "studies/plan_twins.hpp"

#include <algorithm>
#include <map>

#include "sim/step_simulation.hpp"

namespace moesim {

bool path_among(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

PointOverrides changes_without(const PointOverrides& changes, const std::vector<std::string>& paths) {
  PointOverrides out;
  for (const auto& change : changes)
    if (!path_among(paths, change.first)) out.push_back(change);
  return out;
}

PointOverrides plan_step_key(const PlanCandidate& candidate) {
  return changes_without(candidate_changes(candidate), memory_only_paths());
}

std::vector<std::vector<std::size_t>> twin_groups(const std::vector<PlanCandidate>& candidates,
                                                  const std::vector<std::size_t>& members) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<PointOverrides, std::size_t> group_of;
  for (std::size_t at = 0; at < members.size(); ++at) {
    const auto [it, fresh] = group_of.try_emplace(plan_step_key(candidates[members[at]]), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(at);
  }
  return groups;
}

}  // namespace moesim
