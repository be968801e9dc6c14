// Formulas of the "nccl" collective model. Notation: S = bytes (nccl-tests convention), n ranks =
// m NVLink domains x r ranks each, B_nvl = NVLink rate per direction per GPU, B_nic = one NIC
// rail's line rate x nic_efficiency, eff = the profile's busbw efficiency of the algorithm for the
// collective, f = nccl-tests busbw factor. Inside one domain every algorithm moves f·S bytes per
// rank at eff·B_nvl, which is exactly what "busbw efficiency" measures.
#include "models/costs/collective_algorithms.hpp"

#include <algorithm>
#include <cmath>

#include "models/common/units.hpp"

namespace moesim::collectives {

namespace {
struct Links {
  double nvl_Bps = 0;    // NVLink, per direction per GPU
  double nic_Bps = 0;    // one NIC rail, achieved
  double nvl_hop_s = 0;  // per pipeline step over NVLink
  double net_hop_s = 0;  // per pipeline step over the network
};

Links links(const HardwareProfile& hw) {
  Links l;
  l.nvl_Bps = hw.node.nvlink_bw_GBps_per_direction.value * kGB;
  // Gb/s -> bytes/s: / 8 bits per byte.
  l.nic_Bps = hw.node.nic_bw_Gbps_per_gpu.value * kGB / 8.0 * hw.interconnect.inter_node.nic_efficiency.value;
  l.nvl_hop_s = hw.interconnect.intra_node.hop_latency_us.value * 1e-6;
  l.net_hop_s = hw.interconnect.inter_node.hop_latency_us.value * 1e-6;
  return l;
}

const std::optional<Quantity>& efficiency(const CollectiveAlgorithmSpec& a, CollectiveKind k) {
  const auto& e = a.busbw_efficiency;
  switch (k) {
    case CollectiveKind::all_reduce: return e.all_reduce;
    case CollectiveKind::all_gather: return e.all_gather;
    case CollectiveKind::reduce_scatter: return e.reduce_scatter;
    case CollectiveKind::all_to_all: return e.all_to_all;
    case CollectiveKind::broadcast: return e.broadcast;
    case CollectiveKind::send_recv: return e.send_recv;
  }
  return e.all_reduce;
}

double base_s(const CollectiveAlgorithmSpec& a) { return a.base_latency_us.value * 1e-6; }
int ceil_log2(int m) { return m <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(m))); }
}  // namespace

std::optional<Estimate> ring(const HardwareProfile& hw, const Group& g) {
  const auto& spec = hw.interconnect.intra_node.ring;
  const auto& eff = efficiency(spec, g.kind);
  if (!eff) return std::nullopt;
  const Links l = links(hw);
  const bool reduce_and_gather = g.kind == CollectiveKind::all_reduce;
  // Steps as in NCCL's tuning model: 2(n-1) for all_reduce, n-1 otherwise; of those, the ones
  // that cross a node boundary pay the network hop.
  const int steps = reduce_and_gather ? 2 * (g.n - 1) : g.n - 1;
  const int inter = g.m > 1 ? (reduce_and_gather ? 2 * (g.m - 1) : g.m - 1) : 0;
  Estimate e;
  e.ctas = spec.ctas.value;
  e.latency_s = base_s(spec) + (steps - inter) * l.nvl_hop_s + inter * l.net_hop_s;
  // Each rank pushes T = f·S through the ring. Channels leave each node through a different
  // rail, so a node's T crosses the network once, shared by its r NICs: T / r per rank.
  const double T = busbw_factor(g.kind, g.n) * g.bytes;
  e.nic_bytes = g.m > 1 ? T / g.r : 0;
  e.nvlink_bytes = T - e.nic_bytes;
  // The ring kernel moves every byte at its measured intra-node busbw; the NIC share must also
  // fit through the rail (both run concurrently in the pipelined ring).
  const double kernel_s = g.r > 1 ? T / (eff->value * l.nvl_Bps) : 0;
  e.bandwidth_s = std::max(kernel_s, e.nic_bytes / l.nic_Bps);
  return e;
}

std::optional<Estimate> tree(const HardwareProfile& hw, const Group& g) {
  if (g.kind != CollectiveKind::all_reduce) return std::nullopt;
  const auto& spec = hw.interconnect.intra_node.tree;
  const Links l = links(hw);
  Estimate e;
  e.ctas = spec.ctas.value;
  // NCCL's tuning model: 2 x ((r-1) intra hops + log2(m) network hops), up then down.
  e.latency_s = base_s(spec) + 2 * ((g.r - 1) * l.nvl_hop_s + ceil_log2(g.m) * l.net_hop_s);
  // The chain carries the whole buffer up and down inside a node; across nodes the double
  // binary tree moves the bandwidth-optimal 2(m-1)/m of the rail's 1/r share.
  const double T = busbw_factor(g.kind, g.n) * g.bytes;
  e.nic_bytes = g.m > 1 ? 2.0 * (g.m - 1) / g.m * g.bytes / g.r : 0;
  e.nvlink_bytes = g.r > 1 ? 2.0 * (g.r - 1) / g.r * g.bytes : 0;
  const double kernel_s = g.r > 1 ? T / (spec.busbw_efficiency.all_reduce->value * l.nvl_Bps) : 0;
  e.bandwidth_s = std::max(kernel_s, e.nic_bytes / l.nic_Bps);
  return e;
}

std::optional<Estimate> nvls(const HardwareProfile& hw, const Group& g) {
  const auto& spec = hw.interconnect.intra_node.nvls;
  if (!spec || g.m != 1) return std::nullopt;  // NVLS needs one NVLink domain (multi-node: nvls_tree)
  const auto& eff = efficiency(*spec, g.kind);
  if (!eff) return std::nullopt;
  const Links l = links(hw);
  Estimate e;
  e.ctas = spec->ctas.value;
  // NCCL's tuning model charges NVLS one fixed latency, no per-rank steps.
  e.latency_s = base_s(*spec);
  e.bandwidth_s = busbw_factor(g.kind, g.n) * g.bytes / (eff->value * l.nvl_Bps);
  // The switch reduces and multicasts: all_reduce sends S per rank (serving the others' reduce
  // loads, then one multicast store of its shard); all_gather S/n; reduce_scatter (n-1)/n·S.
  const double n = g.n;
  e.nvlink_bytes = g.kind == CollectiveKind::all_reduce   ? g.bytes
                   : g.kind == CollectiveKind::all_gather ? g.bytes / n
                                                          : (n - 1) / n * g.bytes;
  return e;
}

std::optional<Estimate> nvls_tree(const HardwareProfile& hw, const Group& g) {
  const auto& spec = hw.interconnect.intra_node.nvls;
  if (!spec || g.m == 1 || g.r == 1 || g.kind != CollectiveKind::all_reduce) return std::nullopt;
  const Links l = links(hw);
  Estimate e;
  e.ctas = spec->ctas.value;
  // NCCL's tuning model: NVLS latency + 2 log2(m) network hops.
  e.latency_s = base_s(*spec) + 2 * ceil_log2(g.m) * l.net_hop_s;
  e.nvlink_bytes = g.bytes;
  e.nic_bytes = 2.0 * (g.m - 1) / g.m * g.bytes / g.r;
  const double intra_s = busbw_factor(g.kind, g.r) * g.bytes / (spec->busbw_efficiency.all_reduce->value * l.nvl_Bps);
  e.bandwidth_s = std::max(intra_s, e.nic_bytes / l.nic_Bps);
  return e;
}

std::optional<Estimate> hierarchical(const HardwareProfile& hw, const Group& g) {
  const bool supported = g.kind == CollectiveKind::all_reduce || g.kind == CollectiveKind::all_gather ||
                         g.kind == CollectiveKind::reduce_scatter;
  if (!supported || g.m == 1 || g.r == 1) return std::nullopt;
  const auto& ring_spec = hw.interconnect.intra_node.ring;
  const Links l = links(hw);
  const double S = g.bytes, r = g.r, m = g.m;
  // Intra phases are ring reduce-scatter / all-gather over r ranks of the whole buffer; the inter
  // phase runs on each rail over m ranks with the rank's 1/r share. Phases run one after another.
  const double rs_s = (r - 1) / r * S / (ring_spec.busbw_efficiency.reduce_scatter->value * l.nvl_Bps);
  const double ag_s = (r - 1) / r * S / (ring_spec.busbw_efficiency.all_gather->value * l.nvl_Bps);
  const double intra_hops = (g.r - 1) * l.nvl_hop_s;
  Estimate e;
  e.ctas = ring_spec.ctas.value;
  if (g.kind == CollectiveKind::all_reduce) {
    e.nic_bytes = 2 * (m - 1) / m * S / r;
    e.nvlink_bytes = 2 * (r - 1) / r * S;
    e.latency_s = 3 * base_s(ring_spec) + 2 * intra_hops + 2 * (g.m - 1) * l.net_hop_s;
    e.bandwidth_s = rs_s + e.nic_bytes / l.nic_Bps + ag_s;
  } else {
    e.nic_bytes = (m - 1) / m * S / r;
    e.nvlink_bytes = (r - 1) / r * S;
    e.latency_s = 2 * base_s(ring_spec) + intra_hops + (g.m - 1) * l.net_hop_s;
    e.bandwidth_s = (g.kind == CollectiveKind::all_gather ? ag_s : rs_s) + e.nic_bytes / l.nic_Bps;
  }
  return e;
}

bool pxn_relays(const HardwareProfile& hw, PxnChoice choice) {
  const auto& net = hw.interconnect.inter_node;
  if (net.fabric.value != ScaleOutTopology::rail_optimized) return false;  // no rail to reach
  return choice == PxnChoice::profile ? net.pxn.value : choice == PxnChoice::on;
}

namespace {
// all_to_all across m > 1 nodes: S / n to every peer; r - 1 peers over NVLink, n - r across nodes
// over one NIC per rank (alltoall cannot aggregate several NICs per rank: nccl-tests issue 267).
// Of the n - r remote peers, m - 1 sit on the rank's own rail, (m - 1)(r - 1) on other rails.
//  - PXN (NVIDIA blog "Doubling all2all Performance with NCCL 2.12"; NCCL_P2P_PXN_LEVEL=2, the
//    default): a row for GPU j != i of node B first crosses NVLink to GPU j of the sender's node,
//    which sends it over rail j together with its own. Per rank: NVLink + (m-1)(r-1) S/n relayed,
//    the NIC still S(n-r)/n, now in m - 1 aggregated messages (one per remote node); one extra
//    NVLink hop, no spine.
//  - No PXN: each of the n - r rows goes over the rank's own rail as its own message; on a
//    rail-optimized fabric the cross-rail ones climb to the spine (a second switch level), on a
//    fat tree any of them may.
void all_to_all_across_nodes(const HardwareProfile& hw, const Group& g, const Links& l, Estimate& e) {
  const auto& net = hw.interconnect.inter_node;
  const double share = g.bytes / g.n;
  const bool relay = g.r > 1 && pxn_relays(hw, g.pxn);
  e.nvlink_relay_bytes = relay ? share * (g.m - 1) * (g.r - 1) : 0;
  e.nvlink_bytes = share * (g.r - 1) + e.nvlink_relay_bytes;
  e.nic_bytes = share * (g.n - g.r);
  e.network_messages = relay ? g.m - 1 : g.n - g.r;
  e.peer_latency_s = e.network_messages * net.per_peer_latency_us.value * 1e-6;
  const bool rail_optimized = net.fabric.value == ScaleOutTopology::rail_optimized;
  const bool via_spine = !relay && (!rail_optimized || g.r > 1);
  e.latency_s += l.net_hop_s + (relay ? l.nvl_hop_s : 0) + (via_spine ? net.spine_hop_latency_us.value * 1e-6 : 0) +
                 e.peer_latency_s;
}
}  // namespace

std::optional<Estimate> p2p(const HardwareProfile& hw, const Group& g) {
  if (g.kind != CollectiveKind::all_to_all && g.kind != CollectiveKind::send_recv) return std::nullopt;
  const auto& spec = hw.interconnect.intra_node.p2p;
  const double eff = efficiency(spec, g.kind)->value;
  const Links l = links(hw);
  Estimate e;
  e.ctas = spec.ctas.value;
  e.latency_s = base_s(spec);
  if (g.kind == CollectiveKind::all_to_all && g.m > 1) {
    all_to_all_across_nodes(hw, g, l, e);
    e.bandwidth_s = std::max(e.nvlink_bytes / (eff * l.nvl_Bps), e.nic_bytes / l.nic_Bps);
    return e;
  }
  e.latency_s += g.m > 1 ? l.net_hop_s : l.nvl_hop_s;
  if (g.kind == CollectiveKind::all_to_all) {
    // One NVLink domain: S / n to each of the r - 1 peers.
    e.nvlink_bytes = g.bytes * (g.r - 1) / g.n;
    e.bandwidth_s = e.nvlink_bytes / (eff * l.nvl_Bps);
  } else if (g.m > 1) {
    // The slowest pair crosses nodes: its whole buffer goes over the rail.
    e.nic_bytes = g.bytes;
    e.bandwidth_s = g.bytes / l.nic_Bps;
  } else {
    e.nvlink_bytes = g.bytes;
    e.bandwidth_s = g.bytes / (eff * l.nvl_Bps);
  }
  return e;
}

}  // namespace moesim::collectives
