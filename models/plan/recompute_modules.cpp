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

}  // namespace moesim
