// The registered EP transports. Byte counts per rank for a request of `bytes` (all K routed
// copies of the rank's T tokens) over n ranks, r of them in each of m NVLink domains:
//   nccl_all_to_all, symmetric_memory: every copy travels (bytes / n to each rank): NVLink
//     bytes (r - 1) / n, NIC bytes (n - r) / n;
//   deepep: each token once per destination rank that holds one of its experts, and across
//     nodes once per destination node (RDMA to the GPU with the same local rank, which forwards
//     it over NVLink to the others there): NIC (bytes / K) (m - 1) q_node; NVLink (bytes / K)
//     m (r - 1) q_rank (in each of the m nodes, the token reaches the r - 1 ranks other than the
//     one holding it with probability q_rank each), with q the hit probabilities of a rank and of
//     a node under uniform routing (hit_probability);
//   hybridep: DeepEP's bytes (NVIDIA's HybridEP deduplicates the same way);
//   nccl_all_gather: the rank's T tokens (bytes = T x row bytes) reach every other rank of the
//     group: NVLink T (r - 1), NIC T (n - r) per rank, by the collective model's all-gather toward
//     the experts and reduce-scatter back.
// Across nodes the NCCL-based transports take the collective model's fabric and PXN path
// (collective_algorithms.cpp); DeepEP's RDMA goes to the same local rank of each other node, on
// the sender's own rail (one switch level), as m - 1 messages that each pay the per-peer latency.
#include "models/costs/ep_transports.hpp"

#include <algorithm>
#include <cmath>

#include "models/common/errors.hpp"
#include "models/common/units.hpp"

namespace moesim {

const std::vector<EpTransport>& all_ep_transports() {
  static const std::vector<EpTransport> all{EpTransport::nccl_all_to_all, EpTransport::symmetric_memory,
                                            EpTransport::deepep, EpTransport::nccl_all_gather, EpTransport::hybridep};
  return all;
}

double hit_probability(double experts, double held, double top_k) {
  // 1 - C(experts - held, K) / C(experts, K): the K distinct experts all miss the held ones.
  double miss = 1;
  for (double i = 0; i < top_k && miss > 0; ++i) miss *= std::max(0.0, experts - held - i) / (experts - i);
  return 1 - miss;
}

namespace {

EpTransferCost from_collective(const CollectiveCost& c) {
  return {.time_s = c.time_s,
          .nvlink_bytes = c.nvlink_bytes_per_rank,
          .nic_bytes = c.nic_bytes_per_rank,
          .ctas = c.ctas,
          .nvlink_relay_bytes = c.nvlink_relay_bytes_per_rank,
          .latency_s = c.latency_s,
          .peer_latency_s = c.peer_latency_s,
          .network_messages = c.network_messages};
}

[[noreturn]] void missing(const HardwareProfile& hw, std::string_view transport) {
  throw ProfileGapError(hw.name, "interconnect.ep_transports." + std::string(transport),
                        "hardware profile \"" + hw.name + "\" has no numbers for the " + std::string(transport) +
                            " EP transport; use plan.expert_parallel.transport=nccl_all_to_all");
}

// DeepEP's and HybridEP's bytes per rank, with the group's r ranks in each of its n / r NVLink
// domains: each token once per destination rank holding one of its experts, across domains once
// per destination domain (module comment); `received`: the rows a rank receives, its own included.
struct Deduplicated {
  EpTransferCost cost;  // its NVLink and NIC bytes
  double received = 0;
  double m = 1;  // NVLink domains the group spans
};
Deduplicated deduplicated(const HardwareProfile& hw, const EpTransferRequest& request) {
  // Ranks of the group in each NVLink domain, resolved (and checked) as the collective model does.
  const double r = ranks_per_domain(hw, request.ranks, request.ranks_per_node);
  const double n = request.ranks, m = n / r;
  const double tokens_bytes = request.bytes / request.top_k;
  const double q_rank = hit_probability(request.experts, request.experts / n, request.top_k);
  double q_node = hit_probability(request.experts, request.experts / m, request.top_k);
  // Group-limited routing (DeepSeek-V3 Section 2.1.2, node-limited routing): a token's experts lie
  // in at most M of the G groups, so a node holding G / m of the groups is reached no more often
  // than one of those M groups lies on it.
  if (request.groups_per_token > 0) {
    const double G = request.expert_groups;
    q_node = std::min(q_node, hit_probability(G, G / m, request.groups_per_token));
  }
  Deduplicated d;
  d.cost.nic_bytes = tokens_bytes * (m - 1) * q_node;
  d.cost.nvlink_bytes = tokens_bytes * m * (r - 1) * q_rank;
  d.received = tokens_bytes * m * r * q_rank;
  d.m = m;
  return d;
}

// A transport that is one NCCL collective each way, priced by the collective model
// (ep_collective_request); the permutations are the layer's own kernels.
class NcclTransport : public EpTransportModel {
 public:
  NcclTransport(EpTransport transport, std::string_view description)
      : EpTransportModel(name_of(transport), description), transport_(transport) {}
  EpTransferCost cost(const HardwareProfile& hw, const CollectiveModel& collectives,
                      const EpTransferRequest& request) const override {
    return from_collective(collectives.cost(hw, ep_collective_request(transport_, request)));
  }
  bool fuses_permutation() const override { return false; }

 private:
  EpTransport transport_;
};

class NcclAllToAll final : public NcclTransport {
 public:
  NcclAllToAll()
      : NcclTransport(EpTransport::nccl_all_to_all,
                      "NCCL all_to_all of rows permuted into per-destination blocks (the collective model's "
                      "p2p algorithm): every routed copy travels; permute and unpermute kernels around it") {}
};

// Row-wise puts of every routed copy into the destination's symmetric buffer, at its expert's
// slot (Olmo-core's rowwise NVSHMEM path): the same bytes as NCCL's all-to-all, in the time the
// profile measured against it, on the SMs its kernels hold, and no permutation kernels.
class SymmetricMemory final : public EpTransportModel {
 public:
  SymmetricMemory()
      : EpTransportModel("symmetric_memory",
                         "row-wise puts into capacity-sized symmetric buffers at each row's expert slot "
                         "(Olmo-core rowwise NVSHMEM): NCCL's bytes at the profile's measured time ratio, "
                         "no permutation kernels") {}
  EpTransferCost cost(const HardwareProfile& hw, const CollectiveModel& collectives,
                      const EpTransferRequest& request) const override {
    const auto& spec = hw.interconnect.ep_transports.symmetric_memory;
    if (!spec) missing(hw, name());
    EpTransferCost c = from_collective(collectives.cost(hw, all_to_all_request(request)));
    if (request.ranks <= 1) return c;
    // The measured ratio covers the whole call, its fixed part included.
    c.time_s *= spec->time_over_nccl_all_to_all.value;
    c.latency_s *= spec->time_over_nccl_all_to_all.value;
    c.peer_latency_s *= spec->time_over_nccl_all_to_all.value;
    c.ctas = static_cast<int>(spec->ctas.value);
    return c;
  }
  bool fuses_permutation() const override { return true; }
};

// DeepEP's normal (high-throughput) kernels: deduplicated tokens, hierarchical across nodes,
// NVLink and RDMA pipelined, so the slower of the two sets the time.
class DeepEp final : public EpTransportModel {
 public:
  DeepEp()
      : EpTransportModel("deepep",
                         "DeepEP normal kernels: each token once per destination rank; across nodes once per node "
                         "over RDMA, then NVLink forwarding; the slower of NVLink and RDMA sets the time") {}
  EpTransferCost cost(const HardwareProfile& hw, const CollectiveModel& /*collectives*/,
                      const EpTransferRequest& request) const override {
    const auto& spec = hw.interconnect.ep_transports.deepep;
    if (!spec) missing(hw, name());
    if (request.ranks <= 1) return {};
    const Deduplicated bytes = deduplicated(hw, request);
    EpTransferCost c = bytes.cost;
    const double nvlink_Bps = hw.node.nvlink_bw_GBps_per_direction.value * kGB * spec->nvlink_efficiency.value;
    const double nic_Bps = hw.node.nic_bw_Gbps_per_gpu.value * kGB / 8 * spec->rdma_efficiency.value;
    c.network_messages = static_cast<int>(bytes.m) - 1;
    c.peer_latency_s = c.network_messages * hw.interconnect.inter_node.per_peer_latency_us.value * 1e-6;
    c.latency_s = spec->base_latency_us.value * 1e-6 + c.peer_latency_s;
    c.time_s = c.latency_s + std::max(c.nvlink_bytes / nvlink_Bps, c.nic_bytes / nic_Bps);
    c.ctas = static_cast<int>(spec->ctas.value);
    return c;
  }
  bool fuses_permutation() const override { return false; }
};

// NVIDIA's HybridEP (deepseek-ai/DeepEP hybrid-ep branch; Megatron-Core's flex dispatcher,
// backend "hybridep"): DeepEP's deduplicated bytes, TMA copies inside an NVLink domain, RDMA to
// the same local rank of each other domain. Its benchmark (tests/test_hybrid_ep.py) reports the
// rows a rank receives, its own included, x row bytes over the kernel time, by the SMs given to
// dispatch and to combine; the profile keeps those rates by SMs, linear between points,
// proportional below the first (each block moves its own share) and flat above the last (the
// link saturated). Across domains the NIC moves the node-deduplicated rows at the measured
// fraction of line rate for that SM count; the slower side sets the time.
class HybridEp final : public EpTransportModel {
 public:
  // HybridEP's Configurer defaults (csrc/hybrid_ep configurer, DeepEP hybrid-ep branch): 32 SMs
  // each for dispatch and combine inside one NVLink domain, 8 when the group spans domains.
  static constexpr int kDefaultSmsOneDomain = 32;
  static constexpr int kDefaultSmsAcrossDomains = 8;

  HybridEp()
      : EpTransportModel("hybridep",
                         "NVIDIA HybridEP: each token once per destination rank, TMA copies inside the NVLink domain "
                         "and RDMA once per other domain; the measured rate for the SMs it is given") {}
  EpTransferCost cost(const HardwareProfile& hw, const CollectiveModel& /*collectives*/,
                      const EpTransferRequest& request) const override {
    const auto& spec = hw.interconnect.ep_transports.hybridep;
    if (!spec) missing(hw, name());
    if (request.ranks <= 1) return {};
    const Deduplicated bytes = deduplicated(hw, request);
    const double m = bytes.m;
    const int sms = request.sms > 0 ? request.sms : (m > 1 ? kDefaultSmsAcrossDomains : kDefaultSmsOneDomain);
    EpTransferCost c = bytes.cost;
    const ProfileTable& rate = request.toward_experts ? spec->dispatch_GBps_by_sms : spec->combine_GBps_by_sms;
    double seconds = bytes.received / (by_sms(rate, sms) * kGB);
    c.latency_s = spec->base_latency_us.value * 1e-6;
    if (m > 1) {
      const auto& rdma =
          request.toward_experts ? spec->rdma_dispatch_efficiency_by_sms : spec->rdma_combine_efficiency_by_sms;
      if (!rdma) {
        throw ProfileGapError(hw.name, "interconnect.ep_transports.hybridep.rdma_dispatch_efficiency_by_sms",
                              "hardware profile \"" + hw.name +
                                  "\" has no HybridEP RDMA rates: an EP group across NVLink domains cannot use it");
      }
      const double nic_Bps = hw.node.nic_bw_Gbps_per_gpu.value * kGB / 8 * by_sms(*rdma, sms);
      seconds = std::max(seconds, c.nic_bytes / nic_Bps);
      c.network_messages = static_cast<int>(m) - 1;
      c.peer_latency_s = c.network_messages * hw.interconnect.inter_node.per_peer_latency_us.value * 1e-6;
      c.latency_s += c.peer_latency_s;
    }
    c.time_s = c.latency_s + seconds;
    c.ctas = sms;
    return c;
  }
  bool fuses_permutation() const override { return false; }

 private:
  // The table's value at `sms`: linear between points and flat above the last (ProfileTable::linear_at),
  // proportional below the first (each block moves its own share).
  static double by_sms(const ProfileTable& t, double sms) {
    const TablePoint& first = t.points().front();
    return sms < first.x ? first.y * sms / first.x : t.linear_at(sms);
  }
};

// Megatron-Core's all-gather token dispatcher (megatron/core/transformer/moe/token_dispatcher.py
// MoEAllGatherTokenDispatcher): token_dispatch all-gathers the hidden states (with the routing
// map and probabilities, T x experts each: not counted) over the EP group; dispatch_postprocess
// permutes out the rows of the rank's own experts; combine_preprocess unpermutes them into a
// zeroed [n x T, d] tensor that token_combine reduce-scatters back: each direction one NCCL
// collective on the rank's tokens.
class NcclAllGather final : public NcclTransport {
 public:
  NcclAllGather()
      : NcclTransport(EpTransport::nccl_all_gather,
                      "Megatron-Core's all-gather dispatcher: every token all-gathered to every rank of the group, "
                      "each rank permuting out its experts' rows; the combine reduce-scatters them back") {}
  bool gathers_tokens() const override { return true; }
};

}  // namespace

const Registry<EpTransportModel>& ep_transport_models() {
  static const auto registry =
      make_registry<EpTransportModel, NcclAllToAll, SymmetricMemory, DeepEp, NcclAllGather, HybridEp>("EP transport");
  return registry;
}

const EpTransportModel& ep_transport_model(EpTransport transport) {
  return ep_transport_models().get(name_of(transport));
}

}  // namespace moesim
