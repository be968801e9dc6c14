#include "models/plan/designs/ddp_family.hpp"

#include "models/memory/persistent_state.hpp"

namespace moesim {

namespace {
constexpr GrammarPart kDdpParts[] = {{"ep", "plan.expert_parallel.degree", true, ""},
                                     {"etp", "plan.expert_parallel.tensor_degree", true, ""},
                                     {"nodistopt", "plan.ddp.distributed_optimizer", false, "false"}};
}  // namespace

std::vector<std::pair<std::string, std::string>> DdpFamilyDesign::word_fields() const {
  return {{"plan.design", "\"ddp\""}, {"plan.expert_parallel.degree", "1"}, {"plan.pipeline.degree", "1"}};
}

std::span<const GrammarPart> DdpFamilyDesign::parts() const { return kDdpParts; }

// Olmo-core's DDP: EP on its production rowwise NVSHMEM path (symmetric buffers,
// olmo_core/nn/moe/v2/ep_config.py), its own foreach AdamW on the shard
// (OLMoDDPOptimizer._step_foreach), low-precision weight caches (seed 4.4.3).
DesignDefaults DdpFamilyDesign::defaults() const {
  return {EpTransport::symmetric_memory, OptimizerKernels::olmo_core_foreach, true};
}

std::vector<LedgerItem> DdpFamilyDesign::backward_items(const ParallelPlan& plan, const StageView& view,
                                                        std::int64_t layer) const {
  return {{"weight gradient (one tensor)", MemClass::weight_grad_transient, unit_hold(plan, view, layer).weight_grad,
           "largest local tensor of the layer in compute dtype, added to its FP32 bucket, freed"}};
}

UnitHold DdpFamilyDesign::unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const {
  UnitHold hold;
  hold.weight_grad =
      (view.largest_local.count(unit) ? view.largest_local.at(unit) : 0.0) * bytes_of(plan.precision.compute);
  return hold;
}

std::vector<LedgerItem> DdpFamilyDesign::replicated_state(const std::vector<LocalTensor>& tensors,
                                                          const ParallelPlan& plan, bool sharded_optimizer,
                                                          OptimizerShardReport& report) {
  std::vector<LedgerItem> items;
  add_compute_weights(tensors, plan, items);
  add_gradient_buckets(tensors, plan, items);
  add_optimizer_state(tensors, plan, sharded_optimizer, items, report);
  return items;
}

}  // namespace moesim
