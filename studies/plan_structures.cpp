#include "studies/plan_structures.hpp"

#include "studies/plan_twins.hpp"

namespace moesim {

bool same_structure(const PointOverrides& changes, const PointOverrides& key) {
  // changes_without(changes, structure_free_paths()) == key, without the copy (asked of every
  // screened candidate).
  auto k = key.begin();
  for (const auto& change : changes) {
    if (path_among(structure_free_paths(), change.first)) continue;
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
  PointOverrides key = changes_without(changes, structure_free_paths());
  const std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back({std::move(key), made});
  if (kept_.size() > kKept) kept_.pop_front();
  return made;
}

}  // namespace moesim
