#include "models/plan/rank_layout.hpp"

#include "models/arch/architecture.hpp"

namespace moesim {

RankCoords coords_of(const ParallelPlan& plan, std::int64_t rank) {
  RankCoords c;
  const std::int64_t per_stage = plan.dp();
  c.stage = rank / per_stage;
  c.dp = rank % per_stage;
  c.ep_mp = c.dp % plan.ep;  // innermost: consecutive ranks hold different expert shards
  c.ep_dp = c.dp / plan.ep;
  return c;
}

std::vector<LocalTensor> stage_tensors(const Inventory& inv, const Architecture& arch,
                                       const ParallelPlan& plan, std::int64_t stage) {
  const std::int64_t last = plan.pp - 1;
  std::vector<LocalTensor> out;
  for (const auto& t : inv.tensors) {
    const std::int64_t owner = place_of_layer(plan, arch, t.layer).stage;
    // A tied embedding is also the LM head: the last stage keeps its own copy under PP.
    const bool tied_copy = arch.tie_embeddings && t.cls == TensorClass::embedding && stage == last && last > 0;
    if (owner != stage && !tied_copy) continue;
    LocalTensor lt;
    lt.tensor = &t;
    if (t.cls == TensorClass::routed_expert) {
      // EP-MP shards the stacked expert dimension; EP-DP ranks hold copies (seed 4.3.2).
      lt.local_numel = static_cast<double>(t.numel) / static_cast<double>(plan.ep);
      lt.replica_group = plan.ep_dp();
    } else {
      lt.local_numel = static_cast<double>(t.numel);
      lt.replica_group = plan.dp();
    }
    out.push_back(lt);
  }
  return out;
}

}  // namespace moesim
