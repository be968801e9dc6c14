// Where a rank sits (Megatron-LM's order: PP outermost, then DP, TP innermost, so a TP group fills
// an NVLink domain first; the routed experts split the same ranks of a stage EP-MP innermost: EP8
// fills one HGX host, EP64 stays inside one NVL72 rack), which parameter tensors it holds with each tensor's replica
// group, and the communicators its collectives run on: their sizes and how many members share one NVLink domain
// (plan.domain_gpus(): a host on HGX, a rack of 18 hosts on NVL72) are plan facts.
#pragma once

#include <cstdint>
#include <vector>

#include "models/arch/inventory.hpp"
#include "models/common/cost_types.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct RankCoords {
  std::int64_t stage = 0;       // PP stage
  std::int64_t stage_rank = 0;  // index among the stage's ranks (TP x DP)
  std::int64_t tp = 0;          // index inside the TP group
  std::int64_t dp = 0;          // index inside the DP group (the DP x CP ranks of one TP shard)
  std::int64_t cp = 0;          // index inside the CP group (the sequence chunk pair it holds)
  std::int64_t etp = 0;         // index inside the expert-TP group (its slice of each local expert)
  std::int64_t ep_mp = 0;       // expert shard held (index inside the EP-MP group)
  std::int64_t ep_dp = 0;       // replica index of that expert shard (EP-DP group)
};

RankCoords coords_of(const ParallelPlan& plan, std::int64_t rank);

// The groups of ranks collectives run on, all within one pipeline stage:
//   dp            the stage's ranks holding the same TP shard (dense gradients, the grad-norm
//                 reduction): the whole stage without TP;
//   tp            the ranks splitting each block's linears (activations' all-reduces, or SP's
//                 all-gathers and reduce-scatters);
//   etp           the ranks splitting the same experts' hidden widths (their rows' gather and
//                 scatter);
//   cp            the ranks splitting one sequence (the all-to-all variant's exchanges);
//   cp_ring       one rank and its ring neighbour in the CP group (the ring's K/V passes);
//   ep_mp         ranks holding different expert shards (dispatch and combine);
//   ep_dp         ranks holding copies of the same expert shard (their gradient reduction);
//   fsdp_shard    FSDP's shard group (the whole DP group, or F ranks under HSDP);
//   expert_shard  FSDP with EP: the ranks sharding one expert shard (the shard group's ranks
//                 holding the same EP-MP x ETP slice; torchtitan's efsdp);
//   hsdp_replica  ranks holding the same FSDP shard (HSDP's replica all-reduce, experts' too);
//   pp_neighbours one rank of each of two neighbouring stages (activation transfers).
enum class Communicator : std::uint8_t {
  dp,
  ep_mp,
  ep_dp,
  fsdp_shard,
  expert_shard,
  hsdp_replica,
  pp_neighbours,
  tp,
  cp,
  cp_ring,
  etp
};

struct CommunicatorShape {
  std::int64_t ranks = 1;           // members
  std::int64_t ranks_per_node = 1;  // members inside one NVLink domain (not one host)
};
CommunicatorShape communicator_shape(const ParallelPlan& plan, Communicator communicator);

// Which instance of `communicator` the rank at `coords` belongs to inside its stage: ranks with
// equal instances are members of the same group (the TP index for dp; the rank's index in its
// stage for pp_neighbours).
std::int64_t communicator_instance(const ParallelPlan& plan, const RankCoords& coords, Communicator communicator);

// One rank's widths of a block under tensor parallelism (Megatron-LM ColumnParallelLinear /
// RowParallelLinear): heads, KV groups (one per rank, replicated, when TP exceeds them) and hidden
// widths split by TP; `seq` is the rank's share of the tokens outside the TP regions (1/TP under
// sequence parallelism, else 1). Without TP every width is the architecture's.
struct TpWidths {
  double t = 1;                                               // the TP degree
  double heads = 0;                                           // query heads
  double kv_heads = 0;                                        // KV groups
  double q = 0;                                               // query width (heads x head_dim)
  double kv = 0;                                              // K width (KV groups x q/k head dim)
  double v = 0;                                               // V width (KV groups x value head dim; = kv but for MLA)
  double out = 0;                                             // attention output width (heads x value head dim)
  double mamba_heads = 0, mamba_inner = 0, mamba_groups = 0;  // a Mamba-2 mixer's heads, d_inner, B/C groups
  double dense_hidden = 0, shared_hidden = 0, vocab = 0;
  double seq = 1;
};
TpWidths tp_widths(const Architecture& arch, const ParallelPlan& plan);

struct LocalTensor {
  const TensorInfo* tensor = nullptr;
  double local_numel = 0;          // elements this rank holds as a compute weight
  std::int64_t replica_group = 1;  // ranks holding identical copies (DP, or EP-DP for experts)
  double tp_share = 1;             // the share of the tensor in this rank's TP shard (1/TP or 1)
};

// The tensors of one PP stage as one rank of that stage holds them under `plan`.
std::vector<LocalTensor> stage_tensors(const Inventory& inv, const Architecture& arch, const ParallelPlan& plan,
                                       std::int64_t stage);
// Every stage's tensors (stage_tensors of each) in one pass over the inventory.
std::vector<std::vector<LocalTensor>> tensors_by_stage(const Inventory& inv, const Architecture& arch,
                                                       const ParallelPlan& plan);

// The cost book's request for one EP dispatch or combine of `bytes` (all routed copies, or the
// rank's tokens for a transport that gathers them) over the EP-MP communicator, toward the
// experts or back.
EpTransferRequest ep_transfer_request(const Architecture& arch, const ParallelPlan& plan, double bytes,
                                      bool toward_experts = true);

}  // namespace moesim
