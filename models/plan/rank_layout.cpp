#include "models/plan/rank_layout.hpp"

#include <algorithm>
#include <numeric>
#include <string_view>

#include "models/arch/architecture.hpp"
#include "models/common/units.hpp"

namespace moesim {

TpWidths tp_widths(const Architecture& a, const ParallelPlan& plan) {
  TpWidths w;
  w.t = static_cast<double>(plan.tp);
  w.heads = static_cast<double>(a.attention.num_heads) / w.t;
  w.kv_heads = std::max(1.0, static_cast<double>(a.attention.key_heads()) / w.t);
  w.q = static_cast<double>(a.attn_dim()) / w.t;
  w.kv = w.kv_heads * static_cast<double>(a.attention.qk_head_dim());
  w.v = w.kv_heads * static_cast<double>(a.attention.value_head_dim());
  w.out = static_cast<double>(a.attn_out_dim()) / w.t;
  if (a.mamba) {
    w.mamba_heads = static_cast<double>(a.mamba->num_heads) / w.t;
    w.mamba_inner = static_cast<double>(a.mamba->d_inner()) / w.t;
    w.mamba_groups = std::max(1.0, static_cast<double>(a.mamba->groups) / w.t);
  }
  w.dense_hidden = static_cast<double>(a.dense_hidden) / w.t;
  w.shared_hidden = a.moe ? static_cast<double>(a.moe->shared_hidden) / w.t : 0.0;
  w.vocab = static_cast<double>(a.vocab_size) / w.t;
  w.seq = plan.sequence_share();
  return w;
}

RankCoords coords_of(const ParallelPlan& plan, std::int64_t rank) {
  RankCoords c;
  const std::int64_t per_stage = plan.stage_ranks();
  c.stage = rank / per_stage;
  c.stage_rank = rank % per_stage;
  c.tp = c.stage_rank % plan.tp;  // innermost
  c.dp = c.stage_rank / plan.tp;
  c.cp = c.dp % plan.cp;  // CP inside DP: the ranks of one sequence are neighbours
  // The experts: ETP innermost, then EP-MP (consecutive ETP groups hold different expert shards).
  c.etp = c.stage_rank % plan.etp;
  c.ep_mp = c.stage_rank / plan.etp % plan.ep;
  c.ep_dp = c.stage_rank / (plan.etp * plan.ep);
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

// What TP splits: the block's linears (attention, dense MLP, shared experts), the vocab-parallel
// embedding and LM head (Megatron-LM VocabParallelEmbedding, ColumnParallelLinear output_layer);
// norms and the router stay whole on every TP rank. K and V projections split by KV group, one
// group on each rank when TP exceeds the groups (they are replicated then).
double tensor_parallel_share(const TensorInfo& t, const Architecture& arch, const ParallelPlan& plan) {
  const auto ends_with = [&t](std::string_view tail) {
    return t.name.size() >= tail.size() && t.name.compare(t.name.size() - tail.size(), tail.size(), tail) == 0;
  };
  switch (t.cls) {
    case TensorClass::attention:
      if (ends_with(".w_k") || ends_with(".w_v"))
        return tp_widths(arch, plan).kv_heads / static_cast<double>(arch.attention.num_kv_heads);
      // MLA's down projections (and an MTP module's input projection) are whole on every TP rank
      // (Megatron-Core MLASelfAttention linear_q_down_proj / linear_kv_down_proj).
      if (ends_with(".w_q_a") || ends_with(".w_kv_a") || ends_with(".w_proj")) return 1.0;
      return 1.0 / static_cast<double>(plan.tp);
    case TensorClass::mamba:  // MambaMixer: in_proj column-parallel, out_proj row-parallel
    case TensorClass::embedding:
    case TensorClass::dense_mlp:
    case TensorClass::shared_expert:
    case TensorClass::lm_head: return 1.0 / static_cast<double>(plan.tp);
    case TensorClass::norm:
    case TensorClass::router:
    case TensorClass::routed_expert: break;
  }
  return 1.0;
}

}  // namespace

CommunicatorShape communicator_shape(const ParallelPlan& plan, Communicator communicator) {
  // Rank order PP, DP, TP innermost (EP-MP innermost for the experts): contiguous groups fill
  // NVLink domains (an HGX host, an NVL72 rack), strided ones spread over them.
  const std::int64_t domain = plan.domain_gpus();
  const std::int64_t t = plan.tp;
  switch (communicator) {
    case Communicator::dp: return {plan.dp(), members_per_domain(plan.dp(), t, domain)};
    case Communicator::tp: return {t, members_per_domain(t, 1, domain)};
    case Communicator::cp: return {plan.cp, members_per_domain(plan.cp, t, domain)};
    case Communicator::cp_ring:
      // A ring step is a send to one neighbour and a receive from the other: inside the domain
      // when the whole CP group is.
      return {2, members_per_domain(plan.cp, t, domain) == plan.cp ? 2 : 1};
    case Communicator::ep_mp: return {plan.ep, members_per_domain(plan.ep, plan.etp, domain)};
    case Communicator::ep_dp: return {plan.ep_dp(), members_per_domain(plan.ep_dp(), plan.ep * plan.etp, domain)};
    case Communicator::etp: return {plan.etp, members_per_domain(plan.etp, 1, domain)};
    case Communicator::fsdp_shard: return {plan.shard_group(), members_per_domain(plan.shard_group(), t, domain)};
    case Communicator::expert_shard:
      return {plan.expert_shard_group(), members_per_domain(plan.expert_shard_group(), plan.ep * plan.etp, domain)};
    case Communicator::hsdp_replica: {
      const std::int64_t replicas = plan.dp() / plan.shard_group();
      return {replicas, members_per_domain(replicas, plan.shard_group() * t, domain)};
    }
    case Communicator::pp_neighbours:
      // Stage-major: neighbours share a domain only when a stage is smaller than it.
      return {2, plan.stage_ranks() >= domain ? 1 : 2};
  }
  return {};
}

std::int64_t communicator_instance(const ParallelPlan& plan, const RankCoords& coords, Communicator communicator) {
  switch (communicator) {
    case Communicator::dp: return coords.tp;
    case Communicator::tp: return coords.dp;
    case Communicator::cp:
    case Communicator::cp_ring: return coords.dp / plan.cp * plan.tp + coords.tp;
    case Communicator::ep_mp: return coords.ep_dp * plan.etp + coords.etp;
    case Communicator::ep_dp: return coords.ep_mp * plan.etp + coords.etp;
    case Communicator::etp: return coords.stage_rank / plan.etp;
    case Communicator::fsdp_shard: return coords.dp / plan.shard_group() * plan.tp + coords.tp;
    case Communicator::expert_shard:
      // The shard group's ranks (shard degree x TP, consecutive) split EP-MP x ETP innermost.
      return coords.stage_rank / (plan.shard_group() * plan.tp) * plan.ep * plan.etp + coords.ep_mp * plan.etp +
             coords.etp;
    case Communicator::hsdp_replica: return coords.dp % plan.shard_group() * plan.tp + coords.tp;
    case Communicator::pp_neighbours: return coords.stage_rank;
  }
  return 0;
}

namespace {

// Tensor `t` as a rank of a stage that holds it holds it.
LocalTensor local_tensor(const TensorInfo& t, const Architecture& arch, const ParallelPlan& plan) {
  LocalTensor lt;
  lt.tensor = &t;
  if (t.cls == TensorClass::routed_expert) {
    // EP-MP shards the stacked expert dimension; EP-DP ranks hold copies (seed 4.3.2).
    lt.local_numel = static_cast<double>(t.numel) / static_cast<double>(plan.ep * plan.etp);
    lt.replica_group = plan.ep_dp();
  } else {
    lt.tp_share = tensor_parallel_share(t, arch, plan);
    lt.local_numel = static_cast<double>(t.numel) * lt.tp_share;
    lt.replica_group = plan.dp();
  }
  return lt;
}

// Calls `hold(stage, t)` for each stage holding tensor `t`, in inventory order: its layer's
// stage; a tied embedding is also the LM head, so the head's stage keeps its own copy unless it
// is the embedding's (stage 0).
template <class Hold>
void place_tensors(const Inventory& inv, const Architecture& arch, const ParallelPlan& plan, Hold&& hold) {
  const std::vector<LayerPlace> places = layer_places(plan, arch);
  const std::int64_t head = places.back().stage;  // the last stage, or stage 0 in a V
  for (const auto& t : inv.tensors) {
    const std::int64_t owner = places[static_cast<std::size_t>(t.layer + 1)].stage;
    hold(owner, t);
    if (arch.tie_embeddings && t.cls == TensorClass::embedding && head > 0 && head != owner) hold(head, t);
  }
}

}  // namespace

std::vector<std::vector<LocalTensor>> tensors_by_stage(const Inventory& inv, const Architecture& arch,
                                                       const ParallelPlan& plan) {
  std::vector<std::vector<LocalTensor>> out(static_cast<std::size_t>(plan.pp));
  place_tensors(inv, arch, plan, [&](std::int64_t stage, const TensorInfo& t) {
    out[static_cast<std::size_t>(stage)].push_back(local_tensor(t, arch, plan));
  });
  return out;
}

std::vector<LocalTensor> stage_tensors(const Inventory& inv, const Architecture& arch, const ParallelPlan& plan,
                                       std::int64_t stage) {
  std::vector<LocalTensor> out;
  place_tensors(inv, arch, plan, [&](std::int64_t s, const TensorInfo& t) {
    if (s == stage) out.push_back(local_tensor(t, arch, plan));
  });
  return out;
}

EpTransferRequest ep_transfer_request(const Architecture& arch, const ParallelPlan& plan, double bytes,
                                      bool toward_experts) {
  const CommunicatorShape shape = communicator_shape(plan, Communicator::ep_mp);
  EpTransferRequest request;
  request.bytes = bytes;
  request.ranks = static_cast<int>(shape.ranks);
  request.ranks_per_node = static_cast<int>(shape.ranks_per_node);
  request.top_k = arch.moe ? dbl(arch.moe->top_k) : 1.0;
  request.experts = arch.moe ? dbl(arch.moe->num_experts) : 1.0;
  if (arch.moe) {
    request.expert_groups = dbl(arch.moe->expert_groups);
    request.groups_per_token = dbl(arch.moe->groups_per_token);
  }
  request.pxn = plan.ep_pxn;
  request.toward_experts = toward_experts;
  request.sms = static_cast<int>(plan.ep_sms);
  return request;
}

}  // namespace moesim
