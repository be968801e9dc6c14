// The ledger structures a plan search's screening shares (models/memory/ledger_structure.hpp):
// candidates whose values differ only at structure_free_paths() (the search's microbatch and
// recompute axes) take one structure, made by whichever thread first needs it. The ledger on a
// shared structure is the ledger made alone, so the report is the same bytes.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "models/input/composed_scenario.hpp"
#include "models/memory/ledger_structure.hpp"
#include "studies/plan_space.hpp"

namespace moesim {

// Whether candidate `c` without the values a ledger structure never reads is `key`'s.
bool same_structure(const PlanCandidate& c, const PlanCandidate& key);

class PlanStructures {
 public:
  // `inventory`: the base model's, which every plan keeping the base architecture shares.
  explicit PlanStructures(const Inventory& inventory) : inventory_(inventory) {}

  // The structure of `scenario`, candidate `c` composed: a kept one whose candidate differs from
  // `c` only at structure_free_paths(), or a new one. `own_inventory`: the plan's architecture
  // differs from the base's; its structure is made on that inventory and not kept (its tensors
  // point into that inventory).
  std::shared_ptr<const LedgerStructure> of(const PlanCandidate& c, const Scenario& scenario,
                                            const Inventory* own_inventory = nullptr);

 private:
  // Structures kept at once, the oldest forgotten first: screening threads work through the
  // candidates in order, where only the layout axis varies faster than the microbatch and
  // recompute axes, so a structure's candidates come within a few structures of each other (one
  // per layout, a few threads); a look-up scans them, newest first.
  static constexpr std::size_t kKept = 16;

  const Inventory& inventory_;
  std::mutex mutex_;
  struct Kept {
    PlanCandidate key;  // the candidate that made it, without structure_free_paths()
    std::shared_ptr<const LedgerStructure> structure;
  };
  std::deque<Kept> kept_;  // oldest first
};

}  // namespace moesim
