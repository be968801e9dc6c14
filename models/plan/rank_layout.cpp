#include "models/plan/rank_layout.hpp"

#include <algorithm>
#include <numeric>

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

namespace {

// Members of a group of `size` ranks spaced `stride` apart that share one NVLink domain of `domain`
// consecutive ranks. A group that fits a domain, or fills whole domains, is exact; one that
// straddles domain edges unevenly is given the largest count every domain it touches can hold
// (a divisor of its size, as the collective model needs), so it is never priced as more local
// than its worst-placed members.
std::int64_t members_per_domain(std::int64_t size, std::int64_t stride, std::int64_t domain) {
  return std::gcd(size, std::max<std::int64_t>(1, domain / stride));
}

}  // namespace

CommunicatorShape communicator_shape(const ParallelPlan& plan, Communicator communicator) {
  // Rank order PP, DP, EP-MP innermost: contiguous groups fill NVLink domains (an HGX host, an
  // NVL72 rack), strided ones spread over them.
  const std::int64_t domain = plan.domain_gpus();
  switch (communicator) {
    case Communicator::dp: return {plan.dp(), members_per_domain(plan.dp(), 1, domain)};
    case Communicator::ep_mp: return {plan.ep, members_per_domain(plan.ep, 1, domain)};
    case Communicator::ep_dp: return {plan.ep_dp(), members_per_domain(plan.ep_dp(), plan.ep, domain)};
    case Communicator::fsdp_shard: return {plan.shard_group(), members_per_domain(plan.shard_group(), 1, domain)};
    case Communicator::hsdp_replica: {
      const std::int64_t replicas = plan.dp() / plan.shard_group();
      return {replicas, members_per_domain(replicas, plan.shard_group(), domain)};
    }
    case Communicator::pp_neighbours:
      // Stage-major: neighbours share a domain only when a stage is smaller than it.
      return {2, plan.dp() >= domain ? 1 : 2};
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
