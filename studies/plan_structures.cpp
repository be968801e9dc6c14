#include "studies/plan_structures.hpp"

#include <algorithm>

namespace moesim {

namespace {

bool structure_free(const std::string& path) {
  const std::vector<std::string>& free = structure_free_paths();
  return std::find(free.begin(), free.end(), path) != free.end();
}

}  // namespace

bool same_structure(const PointOverrides& changes, const PointOverrides& key) {
  auto k = key.begin();
  for (const auto& change : changes) {
    if (structure_free(change.first)) continue;
    if (k == key.end() || *k != change) return false;
    ++k;
  }
  return k == key.end();
}

std::shared_ptr<const LedgerStructure> PlanStructures::of(const PointOverrides& changes, const Scenario& scenario,
                                                          const Inventory* own_inventory) {
  if (own_inventory != nullptr)
    return std::make_shared<const LedgerStructure>(ledger_structure(scenario.arch, *own_inventory, scenario.plan));
  {
    // Newest first: the candidates that share a structure come close together.
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)
      if (same_structure(changes, it->key)) return it->structure;
  }
  // Made outside the lock: two threads may both make one, and either's is the same structure.
  auto made = std::make_shared<const LedgerStructure>(ledger_structure(scenario.arch, inventory_, scenario.plan));
  PointOverrides key;
  for (const auto& change : changes)
    if (!structure_free(change.first)) key.push_back(change);
  const std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back({std::move(key), made});
  if (kept_.size() > kKept) kept_.pop_front();
  return made;
}

}  // namespace moesim
