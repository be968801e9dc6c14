#include "studies/plan_twins.hpp"

#include <unordered_map>

namespace moesim {

std::string plan_step_key(const PlanCandidate& candidate) {
  nlohmann::json values = candidate.values;
  for (const auto& axis : plan_memory_only_axes()) values.erase(axis);
  return values.dump();
}

std::vector<std::vector<std::size_t>> twin_groups(const std::vector<PlanCandidate>& candidates,
                                                  const std::vector<std::size_t>& members) {
  std::vector<std::vector<std::size_t>> groups;
  std::unordered_map<std::string, std::size_t> group_of;
  for (std::size_t at = 0; at < members.size(); ++at) {
    const auto [it, fresh] = group_of.try_emplace(plan_step_key(candidates[members[at]]), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(at);
  }
  return groups;
}

}  // namespace moesim
