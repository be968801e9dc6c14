// The values cost models take and give: kernel shapes and times, collective requests and costs.
// Plain types, so that reports can render results without seeing any cost model.
// Collective byte counts follow nccl-tests (NVIDIA/nccl-tests doc/PERFORMANCE.md): `bytes` is the
// per-rank buffer size —
//   all_reduce      the buffer (input = output),
//   all_gather      the OUTPUT (every rank ends with `bytes`; it contributed bytes / ranks),
//   reduce_scatter  the INPUT (every rank ends with bytes / ranks),
//   all_to_all      the total send buffer per rank (bytes / ranks to each peer, itself included),
//   broadcast       the buffer,
//   send_recv       what each rank sends to its one peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/enum_names.hpp"

namespace moesim {

enum class CollectiveKind : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };
inline constexpr std::size_t kCollectiveKinds =
    static_cast<std::size_t>(CollectiveKind::broadcast) + 1;  // the last one

inline constexpr EnumNames<CollectiveKind, 6> kCollectiveKindNames{"collective kind",
                                                                   {{{CollectiveKind::all_reduce, "all_reduce"},
                                                                     {CollectiveKind::all_gather, "all_gather"},
                                                                     {CollectiveKind::reduce_scatter, "reduce_scatter"},
                                                                     {CollectiveKind::all_to_all, "all_to_all"},
                                                                     {CollectiveKind::send_recv, "send_recv"},
                                                                     {CollectiveKind::broadcast, "broadcast"}}}};
constexpr std::string_view name_of(CollectiveKind value) { return kCollectiveKindNames.name(value); }
// Throws UnknownNameError listing the valid kinds.
CollectiveKind parse_collective_kind(std::string_view name);
const std::vector<CollectiveKind>& all_collective_kinds();

// Whether cross-node all-to-all rows bound for another rail take NCCL's PXN relay (NVLink to the
// local GPU on the destination's rail, then that rail): the profile's interconnect.inter_node.pxn,
// or forced by the plan (expert_parallel.pxn) or `moesim cost --pxn`.
enum class PxnChoice : std::uint8_t { profile, on, off };
inline constexpr EnumNames<PxnChoice, 3> kPxnChoiceNames{
    "PXN choice", {{{PxnChoice::profile, "profile"}, {PxnChoice::on, "on"}, {PxnChoice::off, "off"}}}};
constexpr std::string_view name_of(PxnChoice value) { return kPxnChoiceNames.name(value); }
PxnChoice parse_pxn_choice(std::string_view name);  // "profile", "on", "off"; throws UnknownNameError

struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes = 0;        // nccl-tests convention above
  int ranks = 1;           // group size
  int ranks_per_node = 0;  // group ranks sharing one NVLink domain; 0: min(ranks, domain size)
  std::string algorithm;   // "" = the fastest available; else forced (error if unavailable)
  PxnChoice pxn = PxnChoice::profile;
  bool operator==(const CollectiveRequest&) const = default;  // every field (a cost book keeps prices by it)
};

struct CollectiveCost {
  std::string algorithm;  // the one used ("none" for a group of one)
  double time_s = 0;
  double latency_s = 0;              // the fixed part of time_s
  double algbw_GBps = 0;             // bytes / time, GB = 1e9
  double busbw_GBps = 0;             // algbw x busbw_factor
  double nvlink_bytes_per_rank = 0;  // sent by one rank over NVLink
  double nic_bytes_per_rank = 0;     // sent by one rank over its NIC rail
  // Of nvlink_bytes_per_rank: other ranks' cross-rail rows this rank forwards for PXN (counted
  // once, on the NVLink leg into the relay; the relay then sends them in its NIC bytes).
  double nvlink_relay_bytes_per_rank = 0;
  double peer_latency_s = 0;  // of latency_s: the per-peer term (network messages x per-peer latency)
  int network_messages = 0;   // network sends one rank posts (all_to_all: one per remote peer, or per node with PXN)
  int nodes = 1;              // NVLink domains the group spans
  int ranks_per_node = 1;     // group ranks in each of them (as resolved)
  int ctas = 0;               // NCCL CTAs it runs on, each holding one SM (0: nothing runs)
};

// How an MoE layer's routed rows reach the ranks holding their experts and come back
// (ep_transports.hpp prices each; the plan's expert_parallel.transport picks one):
//   nccl_all_to_all   NCCL all_to_all(_single) of rows permuted into per-destination blocks, with
//                     per-layer staging tensors (Olmo-core's sync path, torchtitan);
//   symmetric_memory  row-wise puts into capacity-sized symmetric buffers kept for the run, each
//                     routed row written into its expert's slot on the destination (Olmo-core's
//                     production rowwise NVSHMEM path);
//   deepep            DeepEP's normal kernels: each token sent once per destination rank, across
//                     nodes once per destination node over RDMA then forwarded over NVLink;
//   nccl_all_gather   Megatron-Core's all-gather token dispatcher (MoEAllGatherTokenDispatcher):
//                     every rank gathers every token of the group and picks its experts' rows
//                     itself; the combine reduce-scatters the unpermuted outputs back.
//   hybridep          NVIDIA's HybridEP (DeepEP's hybrid-ep branch, Megatron-Core's flex
//                     dispatcher backend "hybridep"): DeepEP's deduplication, TMA copies inside
//                     the NVLink domain, RDMA across domains, at a rate set by the SMs it is given.
enum class EpTransport : std::uint8_t { nccl_all_to_all, symmetric_memory, deepep, nccl_all_gather, hybridep };
inline constexpr EnumNames<EpTransport, 5> kEpTransportNames{"EP transport",
                                                             {{{EpTransport::nccl_all_to_all, "nccl_all_to_all"},
                                                               {EpTransport::symmetric_memory, "symmetric_memory"},
                                                               {EpTransport::deepep, "deepep"},
                                                               {EpTransport::nccl_all_gather, "nccl_all_gather"},
                                                               {EpTransport::hybridep, "hybridep"}}}};
constexpr std::string_view name_of(EpTransport value) { return kEpTransportNames.name(value); }
const std::vector<EpTransport>& all_ep_transports();

// One dispatch or combine of a rank's routed rows over the EP-MP group.
struct EpTransferRequest {
  // The rank's routed rows (all K copies of each token) x row bytes; for a transport that gathers
  // every token (EpTransportModel::gathers_tokens), the rank's tokens once x row bytes.
  double bytes = 0;
  int ranks = 1;                       // EP-MP group size
  int ranks_per_node = 0;              // as in CollectiveRequest
  double top_k = 1;                    // routed copies of each token (rank- and node-level deduplication)
  double experts = 1;                  // routed experts of the layer, spread evenly over the group
  PxnChoice pxn = PxnChoice::profile;  // the NCCL-based transports' cross-rail path
  // Group-limited routing (DeepSeek-V3): the experts in `expert_groups` groups, each token's in at
  // most `groups_per_token` of them (0: unlimited).
  double expert_groups = 0;
  double groups_per_token = 0;
  // Rows travel toward the experts (the dispatch, and the combine's gradient) or back from them
  // (the combine, and the dispatch's gradient): an all-gather one way, a reduce-scatter the other
  // for the all-gather dispatcher; the all-to-all transports move the same bytes either way.
  bool toward_experts = true;
  int sms = 0;  // SMs the transport's kernels may hold, for a transport whose rate depends on it (0: its default)
};
// One dispatch or combine as a transport priced it (ep_transports.hpp).
struct EpTransferCost {
  double time_s = 0;
  double nvlink_bytes = 0;        // sent by one rank over NVLink
  double nic_bytes = 0;           // sent by one rank over its NIC rail
  int ctas = 0;                   // SMs its kernels hold on each rank
  double nvlink_relay_bytes = 0;  // of nvlink_bytes: cross-rail rows relayed for PXN (NCCL-based transports)
  double latency_s = 0;           // the fixed part of time_s
  double peer_latency_s = 0;      // of latency_s: network messages x the profile's per-peer latency
  int network_messages = 0;       // network sends one rank posts
};

// The NCCL all-to-all that moves the same rows (every routed copy).
inline CollectiveRequest all_to_all_request(const EpTransferRequest& r) {
  CollectiveRequest c;
  c.kind = CollectiveKind::all_to_all;
  c.bytes = r.bytes;
  c.ranks = r.ranks;
  c.ranks_per_node = r.ranks_per_node;
  c.pxn = r.pxn;
  return c;
}

// The NCCL collective a transport's transfer is (or is priced against): for the all-gather
// dispatcher, an all-gather of every rank's tokens toward the experts and a reduce-scatter of the
// [ranks x tokens] outputs back (nccl-tests bytes: the whole gathered buffer); otherwise the
// all-to-all of the routed rows.
inline CollectiveRequest ep_collective_request(EpTransport transport, const EpTransferRequest& r) {
  CollectiveRequest c = all_to_all_request(r);
  if (transport == EpTransport::nccl_all_gather) {
    c.kind = r.toward_experts ? CollectiveKind::all_gather : CollectiveKind::reduce_scatter;
    c.bytes = r.bytes * r.ranks;
  }
  return c;
}

struct KernelTime {
  double time_s = 0;           // wall time of the kernel, launch overhead included
  double flops = 0;            // useful floating-point operations (0 for memory-bound kernels)
  double hbm_bytes = 0;        // estimated HBM traffic (reads + writes)
  double achieved_TFLOPs = 0;  // flops / time_s / 1e12
  double rate_TFLOPs = 0;      // the sustained rate the compute term used (0 if none)
  bool memory_bound = false;   // the HBM roofline floor set the time
};

// Which pass of a linear layer a GEMM is: Y = X W (forward), dX = dY W^T (input gradient,
// "dgrad"), dW = X^T dY (weight gradient, "wgrad"). The passes run different layouts (TN, NN, NT
// in cuBLAS terms) and reach different rates on the same shape.
enum class GemmPass : std::uint8_t { forward, dgrad, wgrad };

// The number format a GEMM's operands run in (its output is BF16 in every case):
//   bf16   BF16 operands;
//   fp8    FP8 E4M3 operands with one scale per tensor (torchao Float8Linear, tensorwise recipe);
//   mxfp8  FP8 E4M3 operands with one E8M0 scale per 32 elements along K (OCP Microscaling
//          Formats spec v1.0), the block-scaled tensor-core format of Blackwell (sm_100).
enum class GemmPrecision : std::uint8_t { bf16, fp8, mxfp8 };

// C[M,N] = A[M,K] · B[K,N].
struct GemmShape {
  double m = 0;  // rows of A and C
  double n = 0;  // columns of B and C
  double k = 0;  // the reduction dimension
  GemmPass pass = GemmPass::forward;
  GemmPrecision precision = GemmPrecision::bf16;
};

// One grouped GEMM: expert e multiplies rows_per_expert[e] rows by its own [K, N] weight.
struct GroupedGemmShape {
  std::span<const double> rows_per_expert;
  double n = 0;
  double k = 0;
  GemmPass pass = GemmPass::forward;
  GemmPrecision precision = GemmPrecision::bf16;
};

// What a memory-bound kernel does to the bytes it moves: kernels of one class reach the same
// fraction of the GPU's streaming (copy) bandwidth.
//   copy           copies and concatenations (FSDP copy-in/out, weight-rebuild pack, embedding)
//   elementwise    casts, norms, activations, accumulation, scaling
//   permute        MoE token permutation and unpermutation (gathers and scatters of rows)
//   cross_entropy  softmax cross-entropy over the vocabulary
//   optimizer      the optimizer update (foreach AdamW over several state tensors)
enum class MemoryKernel : std::uint8_t { copy, elementwise, permute, cross_entropy, optimizer };
inline constexpr std::size_t kMemoryKernels = static_cast<std::size_t>(MemoryKernel::optimizer) + 1;  // the last one

inline constexpr EnumNames<GemmPass, 3> kGemmPassNames{
    "GEMM pass", {{{GemmPass::forward, "forward"}, {GemmPass::dgrad, "dgrad"}, {GemmPass::wgrad, "wgrad"}}}};
constexpr std::string_view name_of(GemmPass value) { return kGemmPassNames.name(value); }
inline constexpr EnumNames<GemmPrecision, 3> kGemmPrecisionNames{
    "GEMM precision", {{{GemmPrecision::bf16, "bf16"}, {GemmPrecision::fp8, "fp8"}, {GemmPrecision::mxfp8, "mxfp8"}}}};
constexpr std::string_view name_of(GemmPrecision value) { return kGemmPrecisionNames.name(value); }
inline constexpr EnumNames<MemoryKernel, 5> kMemoryKernelNames{"memory-kernel class",
                                                               {{{MemoryKernel::copy, "copy"},
                                                                 {MemoryKernel::elementwise, "elementwise"},
                                                                 {MemoryKernel::permute, "permute"},
                                                                 {MemoryKernel::cross_entropy, "cross_entropy"},
                                                                 {MemoryKernel::optimizer, "optimizer"}}}};
constexpr std::string_view name_of(MemoryKernel value) { return kMemoryKernelNames.name(value); }
// The attention kernel a training stack calls (plan.kernels.attention), priced from the hardware
// profile's rates for that kernel:
//   profile        compute.attention_*_TFLOPs: the fastest kernel measured there (a stack that picks
//                  well, e.g. PyTorch SDPA's priority list or Transformer Engine's backend choice);
//   cudnn          cuDNN's fused flash attention (SDPA's CUDNN_ATTENTION, TE's FusedAttention);
//   flash_attn_2   FlashAttention-2 (the flash_attn 2.x package; SDPA's FLASH_ATTENTION backend);
//   flash_attn_3   FlashAttention-3 (flash_attn_interface, Hopper);
//   mem_efficient  SDPA's EFFICIENT_ATTENTION (xFormers' CUTLASS kernel);
//   unfused        Megatron-LM's core attention without a fused kernel (DotProductAttention:
//                  baddbmm scores, fused scale-mask-softmax, dropout, bmm with V), priced from the
//                  GEMM table and HBM rates; it writes and saves the S x S probabilities
//                  (Korthikanti et al. 2022's 5as^2b). A plan's choice, never a profile's.
enum class AttentionKernel : std::uint8_t { profile, cudnn, flash_attn_2, flash_attn_3, mem_efficient, unfused };
inline constexpr EnumNames<AttentionKernel, 6> kAttentionKernelNames{
    "attention kernel",
    {{{AttentionKernel::profile, "profile"},
      {AttentionKernel::cudnn, "cudnn"},
      {AttentionKernel::flash_attn_2, "flash_attn_2"},
      {AttentionKernel::flash_attn_3, "flash_attn_3"},
      {AttentionKernel::mem_efficient, "mem_efficient"},
      {AttentionKernel::unfused, "unfused"}}}};
constexpr std::string_view name_of(AttentionKernel value) { return kAttentionKernelNames.name(value); }

// How a block's pointwise ops (RoPE, the gated activation) run outside a compiled block:
//   fused  one pass each, reading its inputs and writing its output once (Megatron-Core's fused
//          RoPE and bias-SwiGLU, Transformer Engine, Liger; what Inductor makes of a compiled
//          block);
//   eager  PyTorch's eager ops one kernel each (torchtitan's ComplexRoPE: an FP32 upcast, a
//          complex multiply, a cast back; its FeedForward: F.silu, then the product).
enum class PointwiseKernels : std::uint8_t { fused, eager };
inline constexpr EnumNames<PointwiseKernels, 2> kPointwiseKernelsNames{
    "pointwise kernels", {{{PointwiseKernels::fused, "fused"}, {PointwiseKernels::eager, "eager"}}}};
constexpr std::string_view name_of(PointwiseKernels value) { return kPointwiseKernelsNames.name(value); }
// Throw UnknownNameError listing the valid names.
GemmPass parse_gemm_pass(std::string_view name);
GemmPrecision parse_gemm_precision(std::string_view name);
MemoryKernel parse_memory_kernel(std::string_view name);

struct AttentionShape {
  double sequences = 1;  // sequences in the microbatch
  double seq_len = 0;    // tokens per sequence
  double heads = 0;      // query heads
  double kv_heads = 0;   // key/value heads (GQA); 0 means = heads
  double head_dim = 0;   // q and k head width
  bool causal = true;
  double v_head_dim = 0;  // v head width; 0 means = head_dim (MLA: 128 against q/k's 192)
  double window = 0;      // sliding window in keys (causal); 0 means none
};

// A Mamba-2 SSD scan (Dao & Gu 2024 Section 6) over `tokens` tokens of `heads` heads of
// `head_dim`, with `groups` B/C groups of `state_dim` and chunks of `chunk` tokens.
struct ScanShape {
  double tokens = 0;
  double heads = 0;
  double head_dim = 0;
  double groups = 1;
  double state_dim = 0;
  double chunk = 256;
  double seq_len = 0;  // tokens per sequence (the measured rate's axis; 0: the rate's first point)
};
// Forward FLOPs per token of the SSD's chunked algorithm: within each chunk C B^T per group and its
// product with X per head (causal half: Q (G N + H P)), and each chunk's state in and out
// (4 H P N); the state passing between chunks is negligible.
inline double ssd_flops_per_token(const ScanShape& s) {
  return s.chunk * (s.groups * s.state_dim + s.heads * s.head_dim) + 4.0 * s.heads * s.head_dim * s.state_dim;
}

struct AttentionTime {
  KernelTime forward;
  KernelTime backward;
};

}  // namespace moesim
