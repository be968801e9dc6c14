// Which simulated ranks a step replays and the routed rows each expert shard receives
// (sim/step_builder.hpp).
#include "models/moe/routing.hpp"
#include "sim/step_builder.hpp"

namespace moesim {

ExpertLoad layer_expert_load(const Architecture& arch, const ParallelPlan& plan, double tokens, std::int64_t layer) {
  // The rows of the EP x ETP group's tokens (an expert's rows are gathered over its ETP ranks).
  return route(plan.routing, arch.moe->num_experts, arch.moe->top_k, tokens * dbl(plan.ep * plan.etp),
               static_cast<std::uint64_t>(layer));
}

ShardRows shard_expert_rows(const ExpertLoad& load, const Architecture& arch, const ParallelPlan& plan,
                            std::int64_t ep_mp) {
  ShardRows out;
  const std::size_t per = static_cast<std::size_t>(arch.moe->num_experts / plan.ep);
  const auto first = load.rows.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(ep_mp));
  out.rows.assign(first, first + static_cast<std::ptrdiff_t>(per));
  for (double x : load.rows) out.routed += x;
  out.dropped = load.dropped;
  return out;
}

std::int64_t simulated_ranks_per_stage(const Architecture& arch, const ParallelPlan& plan, const SimOptions& options) {
  const bool uneven = arch.moe && plan.routing.kind != RoutingKind::uniform;
  return options.all_ranks ? plan.stage_ranks() : (uneven ? plan.ep * plan.etp : 1);
}

}  // namespace moesim
