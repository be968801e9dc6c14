// A node type: GPU peaks and sustained rates, memory capacity and reserves, interconnect. Every
// number carries its provenance (datasheet, published measurement, fitted, or assumption).
// The schema is documented in hardware_profiles/README.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/cost_types.hpp"

namespace moesim {

class JsonReader;

enum class SourceKind { datasheet, published, fitted, assumption };

struct Quantity {
  double value = 0;
  SourceKind kind = SourceKind::assumption;
  std::string source;  // document / file and where in it; for assumptions, the reasoning
};

std::string_view name_of(SourceKind k);

// A measured curve y(x) with one provenance for all its points: x strictly increasing, y > 0.
struct TablePoint {
  double x = 0;
  double y = 0;
};
// Points are added in x order through add(), which also keeps log(x) for the log-x
// interpolation (the cost models look tables up per expert, per pass, per layer).
class ProfileTable {
 public:
  void add(TablePoint p);
  void scale_y(double factor) {
    for (TablePoint& p : points_) p.y *= factor;
  }
  const std::vector<TablePoint>& points() const { return points_; }
  // Piecewise linear in x between the points, the end values beyond them.
  double linear_at(double x) const;
  const std::vector<double>& log_x() const { return log_x_; }

  SourceKind kind = SourceKind::assumption;
  std::string source;

 private:
  std::vector<TablePoint> points_;
  std::vector<double> log_x_;
};

struct GpuSpec {
  std::string model;
  Quantity peak_bf16_TFLOPs;  // nominal dense peak: MFU's denominator
  Quantity hbm_bw_GBps;       // nominal
  Quantity sm_count;          // streaming multiprocessors (NCCL's CTAs each hold one)
  // Nominal dense FP8 peak, for the FP8 view of MFU (absent: the profile offers no such view).
  std::optional<Quantity> peak_fp8_dense_TFLOPs;
  // The board's default power limit (nvidia-smi's "Default Power Limit"), the one the profile's
  // compute rates hold at; and the limit the scenario's GPUs run under (gpu.power_limit_W, a plain
  // number of watts; absent: the default). models/hw/power_limit.hpp applies a lower one.
  std::optional<Quantity> board_power_W;
  std::optional<double> power_limit_W;
};

struct MemorySpec {
  Quantity usable_capacity_GiB;     // what the allocator can get on an idle GPU
  Quantity cuda_context_GiB;        // CUDA context + kernel images, outside the allocator
  Quantity nccl_buffers_GiB;        // NCCL channel buffers per communicator set
  Quantity library_workspace_GiB;   // cuBLAS/cuBLASLt workspaces
  Quantity fragmentation_fraction;  // share of reserved memory lost to allocator fragmentation
};

struct NodeSpec {
  Quantity gpus_per_node;
  Quantity nvlink_bw_GBps_per_direction;  // per GPU, each way: the intra-domain link rate
  Quantity nic_bw_Gbps_per_gpu;           // one NIC rail per GPU: the inter-node link rate
  // Sustained copy rate each way between the GPU and pinned host memory (PCIe, or NVLink-C2C on
  // Grace hosts): what activation offloading's copies run at. Absent: offloading is refused.
  std::optional<Quantity> host_link_GBps_per_direction;
};

// A low-precision GEMM format the tensor cores run natively: its sustained rate over the BF16 rate
// of the same shape and pass (the BF16 tables and pass ratios stay the base).
struct LowPrecisionGemmSpec {
  ProfileTable gemm_over_bf16_by_rows;                     // x: rows M, y: rate ratio, dense
  ProfileTable grouped_gemm_over_bf16_by_rows_per_expert;  // x: rows per expert, y: rate ratio
};
// Causal attention on FP8 (or MXFP8) q, k and v: cuDNN's fused attention, as Transformer Engine's
// FP8 DotProductAttention calls it (Megatron-Core fp8_dot_product_attention); x: tokens per
// sequence, y: TFLOP/s in the causal count, as attention_*_TFLOPs_by_seq_len.
struct LowPrecisionAttentionSpec {
  ProfileTable fwd_TFLOPs_by_seq_len;
  ProfileTable bwd_TFLOPs_by_seq_len;
};

// Sustained rates (what time is computed from), as opposed to the nominal peaks in GpuSpec.
struct ComputeSpec {
  ProfileTable gemm_bf16_TFLOPs_by_rows;                    // x: rows M, y: TFLOP/s, dense BF16
  ProfileTable grouped_gemm_efficiency_by_rows_per_expert;  // x: rows per expert, y: fraction of dense
  // Backward passes over the forward rate of the same shape (GemmPass): dense, and grouped by
  // rows per expert. Weight gradients with a BF16 output, as Olmo-core's and FSDP2's are.
  Quantity gemm_dgrad_over_forward;
  Quantity gemm_wgrad_over_forward;
  ProfileTable grouped_gemm_dgrad_over_forward_by_rows_per_expert;  // x: rows per expert
  ProfileTable grouped_gemm_wgrad_over_forward_by_rows_per_expert;
  // The dense BF16 rate a GEMM sustains once the board sits at its power limit (clocks lowered
  // until the power fits): a ceiling on gemm_bf16_TFLOPs_by_rows, whose short measurements run
  // above it. Absent where the table is already a sustained, power-limited measurement.
  std::optional<Quantity> gemm_power_limited_TFLOPs;
  Quantity attention_fwd_TFLOPs;  // causal flash attention, forward
  Quantity attention_bwd_TFLOPs;  // causal flash attention, backward
  // The same two rates by tokens per sequence where they were measured (x: sequence length, y:
  // TFLOP/s in the causal count), for the kernel they name; a shape between the points takes the
  // log-length interpolation, outside them the nearest point, and replaces the one rate above.
  std::optional<ProfileTable> attention_fwd_TFLOPs_by_seq_len;
  std::optional<ProfileTable> attention_bwd_TFLOPs_by_seq_len;
  // Mamba-2's SSD chunked scan forward (mamba_ssm's Triton kernels) by tokens per sequence, in the
  // SSD's matmul FLOPs (ssd_flops_per_token); absent: the attention rates above stand in.
  std::optional<ProfileTable> ssd_scan_fwd_TFLOPs_by_seq_len;
  // The kernel those two rates measure (profile: not named), and other kernels' measured rates,
  // for a plan whose stack calls one of them (plan.kernels.attention).
  AttentionKernel attention_kernel = AttentionKernel::profile;
  struct AttentionRates {
    AttentionKernel kernel = AttentionKernel::profile;
    Quantity fwd_TFLOPs;
    Quantity bwd_TFLOPs;
  };
  std::vector<AttentionRates> attention_by_kernel;
  Quantity hbm_sustained_GBps;  // streaming copies: the rate every memory-kernel class is a fraction of
  // Fraction of hbm_sustained_GBps each memory-kernel class reaches (index: MemoryKernel; copy 1).
  std::array<Quantity, kMemoryKernels> hbm_fraction_by_kernel;
  Quantity kernel_launch_us;  // fixed per-kernel overhead
  // A large dense BF16 GEMM's sustained rate at several board power limits (x: watts, y:
  // TFLOP/s): how a lower limit slows the compute-bound kernels (models/hw/power_limit.hpp).
  std::optional<ProfileTable> gemm_TFLOPs_by_power_limit;
  // FP8 formats (GemmPrecision): absent where the GPU has no such tensor-core path (no MXFP8
  // before Blackwell), and a plan that asks for one is refused.
  std::optional<LowPrecisionGemmSpec> fp8_gemm;
  std::optional<LowPrecisionGemmSpec> mxfp8_gemm;
  const LowPrecisionGemmSpec* low_precision(GemmPrecision p) const { return format_of(p, fp8_gemm, mxfp8_gemm); }
  // Measured low-precision attention (absent: nobody published it for this GPU; refused).
  std::optional<LowPrecisionAttentionSpec> fp8_attention;
  std::optional<LowPrecisionAttentionSpec> mxfp8_attention;
  const LowPrecisionAttentionSpec* low_precision_attention(GemmPrecision p) const {
    return format_of(p, fp8_attention, mxfp8_attention);
  }

 private:
  // The FP8 or MXFP8 one of a pair of optional sections; nullptr for BF16 or an absent one.
  template <class Spec>
  static const Spec* format_of(GemmPrecision p, const std::optional<Spec>& fp8, const std::optional<Spec>& mxfp8) {
    const std::optional<Spec>& s = p == GemmPrecision::fp8 ? fp8 : mxfp8;
    return p != GemmPrecision::bf16 && s ? &*s : nullptr;
  }
};

// Bus-bandwidth efficiency of one collective algorithm, by collective: achieved nccl-tests busbw
// divided by the per-direction NVLink rate. nullopt: the algorithm does not run that collective.
struct CollectiveEfficiencies {
  std::optional<Quantity> all_reduce;
  std::optional<Quantity> all_gather;
  std::optional<Quantity> reduce_scatter;
  std::optional<Quantity> all_to_all;
  std::optional<Quantity> broadcast;
  std::optional<Quantity> send_recv;
};

struct CollectiveAlgorithmSpec {
  Quantity base_latency_us;  // fixed cost of one collective call with this algorithm
  Quantity ctas;             // NCCL channels it runs on: one CTA each, holding a whole SM
  CollectiveEfficiencies busbw_efficiency;
};

struct IntraNodeSpec {
  Quantity domain_gpus;                         // GPUs sharing one NVLink domain (8 on HGX, 72 on NVL72)
  Quantity hop_latency_us;                      // per pipeline step over NVLink
  CollectiveAlgorithmSpec ring;                 // all_reduce, all_gather, reduce_scatter, broadcast
  CollectiveAlgorithmSpec tree;                 // all_reduce
  CollectiveAlgorithmSpec p2p;                  // all_to_all, send_recv
  std::optional<CollectiveAlgorithmSpec> nvls;  // absent: no NVLink SHARP on this node type
};

// How the scale-out network connects the nodes' NIC rails (hardware_profiles/README.md,
// "Scale-out fabric"):
//   rail_optimized  GPU i of every node sits on rail (leaf) switch i: same-rail traffic crosses one
//                   switch level, cross-rail traffic a second (the spine) unless it is relayed
//                   (NVIDIA DGX SuperPOD reference architectures, H100 / H200 / B200 / B300);
//   fat_tree        NICs land on leaves without regard to their GPU index: any cross-node message
//                   may cross the spine, and a relay to another rail gains nothing.
enum class ScaleOutTopology : std::uint8_t { rail_optimized, fat_tree };
std::string_view name_of(ScaleOutTopology t);

// A non-numeric profile setting with its provenance, like Quantity.
template <class T>
struct Sourced {
  T value{};
  SourceKind kind = SourceKind::assumption;
  std::string source;
};

struct InterNodeSpec {
  Quantity hop_latency_us;  // per pipeline step over the network
  Quantity nic_efficiency;  // achieved fraction of the NIC line rate for large transfers
  Sourced<ScaleOutTopology> fabric;
  Quantity spine_hop_latency_us;  // added by the second switch level (spine) a cross-rail message crosses
  Quantity per_peer_latency_us;   // per network message a rank posts in a grouped send/recv (all-to-all)
  // NCCL's PXN relay of cross-rail point-to-point rows through the NVLink peer on the destination's
  // rail (on by default since NCCL 2.12); plans and `moesim cost` may override it (PxnChoice).
  Sourced<bool> pxn;
};

// Row-wise symmetric-memory dispatch and combine (EpTransport::symmetric_memory).
struct SymmetricMemoryTransportSpec {
  Quantity time_over_nccl_all_to_all;  // its time over NCCL's all-to-all of the same rows
  Quantity ctas;                       // SMs its put kernels hold
};

// DeepEP's normal kernels (EpTransport::deepep).
struct DeepEpTransportSpec {
  Quantity base_latency_us;    // fixed cost of one dispatch or combine
  Quantity ctas;               // SMs its kernels hold
  Quantity nvlink_efficiency;  // achieved fraction of the per-direction NVLink rate
  Quantity rdma_efficiency;    // achieved fraction of the NIC line rate
};

// HybridEP (EpTransport::hybridep): its benchmark's algorithm bandwidth (rows a rank receives,
// its own included, x row bytes over the kernel time) by the SMs given to dispatch and to combine;
// across NVLink domains the NIC's achieved fraction by SMs (absent: refused across domains).
struct HybridEpTransportSpec {
  Quantity base_latency_us;  // fixed cost of one dispatch or combine
  ProfileTable dispatch_GBps_by_sms, combine_GBps_by_sms;
  std::optional<ProfileTable> rdma_dispatch_efficiency_by_sms, rdma_combine_efficiency_by_sms;
};

// EP transports beyond NCCL's all-to-all (models/costs/ep_transports.hpp); absent: not measured
// for this node type, and plans asking for one are refused.
struct EpTransportSpecs {
  std::optional<SymmetricMemoryTransportSpec> symmetric_memory;
  std::optional<DeepEpTransportSpec> deepep;
  std::optional<HybridEpTransportSpec> hybridep;
};

struct InterconnectSpec {
  IntraNodeSpec intra_node;
  InterNodeSpec inter_node;
  EpTransportSpecs ep_transports;
};

// How kernels and communication running together on one GPU slow each other (the
// resource-sharing policies' parameters; sim/resource_sharing.hpp).
struct InterferenceSpec {
  Quantity compute_slowdown_with_comm;      // fair_share: fraction a GEMM slows while comm kernels run
  Quantity comm_slowdown_with_compute;      // fraction a collective slows while a compute kernel runs
  Quantity hbm_bytes_per_sent_byte_gather;  // HBM traffic per byte sent: gathers, all-to-all, send
  Quantity hbm_bytes_per_sent_byte_reduce;  // the same for reductions (the local input read too)
};

// Fixed costs of a training step outside the kernels.
struct HostSpec {
  Quantity step_overhead_us;  // host work the GPU waits for once per step (optimizer launch, syncs)
};

// GPUs run under a power limit below the board's default: the compute-bound rates (GEMM tables,
// the power-limited ceiling, attention) were scaled by `factor` when the profile was read.
struct PowerLimit {
  double limit_W = 0;
  double board_W = 0;
  double factor = 1;   // the GEMM rate at the limit over the rate at the board's default
  std::string source;  // compute.gemm_TFLOPs_by_power_limit's provenance
};

struct HardwareProfile {
  std::string name;
  std::string description;
  GpuSpec gpu;
  MemorySpec memory;
  NodeSpec node;
  ComputeSpec compute;
  InterconnectSpec interconnect;
  InterferenceSpec interference;
  HostSpec host;
  std::optional<PowerLimit> power_limit;  // set where gpu.power_limit_W is below gpu.board_power_W
};

HardwareProfile parse_hardware_profile(const JsonReader& in);

// Hosts one NVLink domain joins (domain_gpus / gpus_per_node: 1 on HGX, 18 on NVL72).
std::int64_t hosts_per_domain(const HardwareProfile& hw);

}  // namespace moesim
