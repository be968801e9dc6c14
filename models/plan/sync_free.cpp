#include "models/plan/sync_free.hpp"

#include <cstdio>
#include <vector>

#include "models/common/units.hpp"
#include "models/moe/routing.hpp"

namespace moesim {

namespace {

std::string two_places(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", x);
  return text;
}

}  // namespace

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
  if (stash > 0 &&
      (p.offload_modules.has(OffloadModule::expert_fc1) || p.offload_modules.has(OffloadModule::moe_act))) {
    return {"activations.offload_modules",
            "offloads the routed experts' tensors, which moe_paged_stash keeps in its pages (Megatron-Core refuses "
            "expert_fc1 and moe_act with it); allowed: the other modules"};
  }
  return {};
}

SyncFreeRerun sync_free_rerun(const ParallelPlan& p, const Architecture& a) {
  SyncFreeRerun out;
  if (p.routing.rank_capacity_factor <= 0 || !a.moe) return out;
  const std::int64_t E = a.moe->num_experts, K = a.moe->top_k;
  const double T = dbl(batch_shape(p, a).microbatch_tokens);
  // Budget: per layer and microbatch, HybridEP's receive buffer of tokens x top-k x the factor
  // rows (token_dispatcher.py, _HybridEPManager.setup_metadata).
  for (std::int64_t l = 0; l < a.num_layers && out.layer < 0; ++l) {
    if (!a.is_moe_layer(l)) continue;
    const double load = rank_imbalance(route(p.routing, E, K, T * dbl(p.ep), static_cast<std::uint64_t>(l)), p.ep);
    if (load > p.routing.rank_capacity_factor) out = {l, load, -1, 0};
  }
  // Stash: one pool per rank for every MoE layer's saved rows in flight, sized from the balanced
  // rows (allocate_stash_buffers), its CUDA pages then its host pages (paged_stash_copy_kernel):
  // overflows when the rank's rows over its stage's MoE layers exceed the balanced share x the
  // CUDA and host factors.
  const double stash = p.routing.paged_stash_factor + p.routing.paged_stash_host_factor;
  if (p.routing.paged_stash_factor <= 0) return out;
  const std::vector<LayerPlace> places = layer_places(p, a);  // embedding, layers, head
  for (std::int64_t s = 0; s < p.pp; ++s) {
    std::vector<std::int64_t> layers;
    for (std::int64_t l = 0; l < a.num_layers; ++l)
      if (a.is_moe_layer(l) && places[static_cast<std::size_t>(l + 1)].stage == s) layers.push_back(l);
    const double load = peak_rank_load_factor(p.routing, E, K, T, p.ep, layers);
    if (!layers.empty() && load > stash) {
      out.stage = s, out.stage_load = load;
      break;
    }
  }
  return out;
}

std::string SyncFreeRerun::why(const ParallelPlan& p) const {
  std::string out;
  if (layer >= 0) {
    out = "layer " + std::to_string(layer) + "'s most-loaded EP rank receives " + two_places(layer_load) +
          "x the balanced rows, over its budget of " + two_places(p.routing.rank_capacity_factor) + "x";
  }
  if (stage >= 0) {
    out += std::string(out.empty() ? "" : "; ") + "stage " + std::to_string(stage) + "'s most-loaded EP rank saves " +
           two_places(stage_load) + "x the balanced rows, over its paged stash of " +
           two_places(p.routing.paged_stash_factor + p.routing.paged_stash_host_factor) + "x" +
           (p.routing.paged_stash_host_factor > 0 ? " (CUDA and host pages)" : "");
  }
  return out;
}

ParallelPlan synced_dropless(ParallelPlan p) {
  p.routing.rank_capacity_factor = 0;
  p.routing.paged_stash_factor = p.routing.paged_stash_host_factor = 0;
  return p;
}

}  // namespace moesim
