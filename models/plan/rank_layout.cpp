#include "models/plan/rank_layout.hpp"

#include <algorithm>

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

CommunicatorShape communicator_shape(const ParallelPlan& plan, Communicator communicator) {
  // Rank order PP, DP, EP-MP innermost: contiguous groups fill nodes, strided ones spread.
  const std::int64_t node = plan.gpus_per_node;
  switch (communicator) {
    case Communicator::dp: return {plan.dp(), std::min(plan.dp(), node)};
    case Communicator::ep_mp: return {plan.ep, std::min(plan.ep, node)};
    case Communicator::ep_dp: return {plan.ep_dp(), std::min(plan.ep_dp(), std::max<std::int64_t>(1, node / plan.ep))};
    case Communicator::fsdp_shard: return {plan.shard_group(), std::min(plan.shard_group(), node)};
    case Communicator::hsdp_replica: {
      const std::int64_t replicas = plan.dp() / plan.shard_group();
      return {replicas, std::min(replicas, std::max<std::int64_t>(1, node / plan.shard_group()))};
    }
    case Communicator::pp_neighbours:
      return {2,
              plan.dp() >= node ? 1 : 2};  // stage-major: neighbours share a node only when a stage is smaller than it
  }
  return {};
}

std::int64_t communicator_instance(const ParallelPlan& plan, const RankCoords& coords, Communicator communicator) {
  switch (communicator) {
    case Communicator::dp: return 0;
    case Communicator::ep_mp: return coords.ep_dp;
    case Communicator::ep_dp: return coords.ep_mp;
    case Communicator::fsdp_shard: return coords.dp / plan.shard_group();
    case Communicator::hsdp_replica: return coords.dp % plan.shard_group();
    case Communicator::pp_neighbours: return coords.dp;
  }
  return 0;
}

std::vector<LocalTensor> stage_tensors(const Inventory& inv, const Architecture& arch, const ParallelPlan& plan,
                                       std::int64_t stage) {
  std::vector<LocalTensor> out;
  const std::vector<LayerPlace> places = layer_places(plan, arch);
  const std::int64_t head = places.back().stage;  // the last stage, or stage 0 in a V
  for (const auto& t : inv.tensors) {
    const std::int64_t owner = places[static_cast<std::size_t>(t.layer + 1)].stage;
    // A tied embedding is also the LM head: the head's stage keeps its own copy unless it is the
    // embedding's (stage 0).
    const bool tied_copy = arch.tie_embeddings && t.cls == TensorClass::embedding && stage == head && head > 0;
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
