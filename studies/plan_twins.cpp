#include "studies/plan_twins.hpp"

#include <algorithm>
#include <map>

#include "sim/step_simulation.hpp"

namespace moesim {

PointOverrides plan_step_key(const PlanCandidate& candidate) {
  const std::vector<std::string>& memory_only = memory_only_paths();
  PointOverrides key;
  for (const auto& change : candidate.changes) {
    if (std::find(memory_only.begin(), memory_only.end(), change.first) == memory_only.end()) key.push_back(change);
  }
  return key;
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
