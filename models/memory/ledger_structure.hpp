// What a stage's ledger reads of the rank apart from its step: the tensors a rank of the stage
// holds, the view of its layers, its persistent training state and its update's buffers. They
// follow from the model, the sharding and the optimizer, never from the microbatch or the
// recompute policy (structure_free_paths), so plans that differ only there (a plan search's
// innermost axes) can share one structure; the ledger built on a shared structure is the ledger
// built alone (tests/sim/test_ledger_structure.cpp, tests/studies/test_plan_sharing.cpp).
#pragma once

#include <string>
#include <vector>

#include "models/memory/ledger.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

struct StageStructure {
  std::vector<LocalTensor> tensors;  // as stage_tensors gives them
  StageView view;
  std::vector<LedgerItem> persistent;  // persistent_state of the tensors
  OptimizerShardReport optimizer;
  UpdateBuffers update;  // update_buffers of the tensors
};

struct LedgerStructure {
  std::vector<StageStructure> stages;  // one per pipeline stage
};

LedgerStructure ledger_structure(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan);

// The scenario paths a ledger structure never reads: the microbatch size
// ("plan.batch.rank_microbatch_sequences") and the recompute policy ("plan.activations.recompute",
// with its module list and layer count).
const std::vector<std::string>& structure_free_paths();

// build_ledger (ledger.hpp) on a structure made for this plan, or for one that differs from it only
// at structure_free_paths().
MemoryLedger build_ledger(const Architecture& arch, const ParallelPlan& plan, const HardwareProfile& hw,
                          const InFlight& in_flight, const LedgerStructure& structure);

}  // namespace moesim
