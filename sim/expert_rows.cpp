// Which simulated ranks a step replays and the routed rows each expert shard receives
// (sim/step_builder.hpp).
#include "models/moe/routing.hpp"
#include "sim/step_builder.hpp"

namespace moesim {

ShardRows shard_expert_rows(const Architecture& arch, const ParallelPlan& plan, double tokens, std::int64_t layer,
                            std::int64_t ep_mp) {
  ShardRows out;
  // The rows of the EP x ETP group's tokens (an expert's rows are gathered over its ETP ranks).
  const ExpertLoad load = route(plan.routing, arch.moe->num_experts, arch.moe->top_k, tokens * dbl(plan.ep * plan.etp),
                                static_cast<std::uint64_t>(layer));
  const std::size_t per = static_cast<std::size_t>(arch.moe->num_experts / plan.ep);
  const auto first = load.rows.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(ep_mp));
  out.rows.assign(first, first + static_cast<std::ptrdiff_t>(per));
  for (double x : load.rows) out.routed += x;
  out.dropped = load.dropped;
  out.imbalance = rank_imbalance(load, plan.ep);
  return out;
}

std::int64_t simulated_ranks_per_stage(const Architecture& arch, const ParallelPlan& plan, const SimOptions& options) {
  const bool uneven = arch.moe && plan.routing.kind != RoutingKind::uniform;
  return options.all_ranks ? plan.stage_ranks() : (uneven ? plan.ep * plan.etp : 1);
}

}  // namespace moesim
