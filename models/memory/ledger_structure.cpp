#include "models/memory/ledger_structure.hpp"

namespace moesim {

LedgerStructure ledger_structure(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan) {
  LedgerStructure out;
  std::vector<std::vector<LocalTensor>> tensors = tensors_by_stage(inv, arch, plan);
  out.stages.resize(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    StageStructure& s = out.stages[i];
    s.tensors = std::move(tensors[i]);
    s.view = view_of(arch, plan, s.tensors, static_cast<std::int64_t>(i));
    s.persistent = persistent_state(s.tensors, plan, s.optimizer);
    s.update = update_buffers(plan, s.tensors);
  }
  return out;
}

const std::vector<std::string>& structure_free_paths() {
  static const std::vector<std::string> paths = {"plan.batch.rank_microbatch_sequences", "plan.activations.recompute",
                                                 "plan.activations.recompute_modules",
                                                 "plan.activations.recompute_num_layers"};
  return paths;
}

}  // namespace moesim
