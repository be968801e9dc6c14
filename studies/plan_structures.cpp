#include "studies/plan_structures.hpp"

#include <algorithm>

namespace moesim {

namespace {

bool structure_free(const PlanSet& set) {
  const std::vector<std::string>& free = structure_free_paths();
  return std::any_of(free.begin(), free.end(), [&](const std::string& path) { return path == set.key->dotted; });
}

}  // namespace

bool same_structure(const PlanCandidate& c, const PlanCandidate& key) {
  // The key holds no structure-free set (PlanStructures::of drops them); asked of every screened
  // candidate, so compared without a copy.
  auto k = key.sets.begin();
  for (const PlanSet& set : c.sets) {
    if (structure_free(set)) continue;
    if (k == key.sets.end() || k->key != set.key || k->value != set.value) return false;
    ++k;
  }
  return k == key.sets.end() && c.paths == key.paths;
}

std::shared_ptr<const LedgerStructure> PlanStructures::of(const PlanCandidate& c, const Scenario& scenario,
                                                          const Inventory* own_inventory) {
  if (own_inventory != nullptr)
    return std::make_shared<const LedgerStructure>(ledger_structure(scenario.arch, *own_inventory, scenario.plan));
  {
    // Newest first: the candidates that share a structure come close together.
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)
      if (same_structure(c, it->key)) return it->structure;
  }
  // Made outside the lock: two threads may both make one, and either's is the same structure.
  auto made = std::make_shared<const LedgerStructure>(ledger_structure(scenario.arch, inventory_, scenario.plan));
  PlanCandidate key;
  for (const PlanSet& set : c.sets)
    if (!structure_free(set)) key.sets.push_back(set);
  key.paths = c.paths;
  const std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back({std::move(key), made});
  if (kept_.size() > kKept) kept_.pop_front();
  return made;
}

}  // namespace moesim
