#include "models/plan/sync_free.hpp"

namespace moesim {

PlanRule sync_free_rule(const ParallelPlan& p, const Architecture& a) {
  const double budget = p.routing.rank_capacity_factor, stash = p.routing.paged_stash_factor;
  if (stash > 0 && budget == 0) {
    return {"activations.moe_paged_stash",
            "packs the sync-free path's static expert tensors, so it needs expert_parallel.rank_capacity_factor "
            "(Megatron-Core: \"capacity factor must be set\")"};
  }
  if (budget == 0) return {};
  const std::string key = "expert_parallel.rank_capacity_factor";
  if (!a.moe) return {key, "sizes the routed experts' buffers; this architecture has no MoE layers"};
  if (p.ep_transport != EpTransport::hybridep) {
    return {key,
            "is Megatron-Core's sync-free path, which HybridEP's dispatcher runs (flex dispatcher backend "
            "\"hybridep\" with the Transformer Engine op fuser); allowed: expert_parallel.transport \"hybridep\""};
  }
  if (!p.routing.dropless) {
    return {key, "budgets a dropless layer's rows per EP rank; allowed: routing.dropless true"};
  }
  if (p.routing.kind != RoutingKind::uniform) {
    // A rank over its budget (or its stash) makes paged_stash.py's runner rerun the step without
    // them, which is not modelled.
    return {key,
            "reruns a step when a rank's routed rows exceed its budget or stash, which moesim does not model "
            "under skewed routing; allowed: routing.model \"uniform\""};
  }
  if (stash > 0 &&
      (p.offload_modules.has(OffloadModule::expert_fc1) || p.offload_modules.has(OffloadModule::moe_act))) {
    return {"activations.offload_modules",
            "offloads the routed experts' tensors, which moe_paged_stash keeps in its pages (Megatron-Core refuses "
            "expert_fc1 and moe_act with it); allowed: the other modules"};
  }
  return {};
}

}  // namespace moesim
