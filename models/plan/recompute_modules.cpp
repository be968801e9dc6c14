#include "models/plan/recompute_modules.hpp"

#include "models/plan/parallel_plan.hpp"

namespace moesim {

SelectiveRecompute selective_recompute(const ParallelPlan& plan) {
  SelectiveRecompute s;
  if (plan.recompute != Recompute::selective) return s;
  const RecomputeModules& m = plan.recompute_modules;
  if (m.empty()) {
    s.dense_act = s.shared_act = s.routed_act = s.core_attn = true;
    return s;
  }
  s.modules = true;
  s.routed_act = m.has(RecomputeModule::moe_act);
  s.core_attn = m.has(RecomputeModule::core_attn);
  s.layernorm = m.has(RecomputeModule::layernorm);
  s.mla_up_proj = m.has(RecomputeModule::mla_up_proj);
  s.mlp = m.has(RecomputeModule::mlp);
  s.moe = m.has(RecomputeModule::moe);
  s.shared_experts = m.has(RecomputeModule::shared_experts);
  return s;
}

bool whole_layer_recompute(const ParallelPlan& plan, const Architecture& arch, std::int64_t layer) {
  if (plan.recompute != Recompute::full) return false;
  if (plan.recompute_num_layers == 0) return true;
  std::int64_t first = 0;  // the chunk's first layer
  for (const std::int64_t n : virtual_stage_layer_counts(plan, arch)) {
    if (layer < first + n) return layer - first < plan.recompute_num_layers;
    first += n;
  }
  return false;
}

}  // namespace moesim
