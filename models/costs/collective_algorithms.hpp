// The algorithms behind the "nccl" collective model, one function each. A function returns
// nullopt when its algorithm cannot run the request (wrong collective, one node vs several, no
// NVLS in the profile), else the latency, the bandwidth time and the bytes per rank on each link.
#pragma once

#include <optional>

#include "models/costs/collective_model.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim::collectives {

// A validated request: n ranks = m NVLink domains ("nodes") x r ranks in each.
struct Group {
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes = 0;  // nccl-tests convention (collective_model.hpp)
  int n = 1;
  int r = 1;
  int m = 1;
  PxnChoice pxn = PxnChoice::profile;
};

struct Estimate {
  double latency_s = 0;
  double bandwidth_s = 0;
  double nvlink_bytes = 0;        // sent per rank over NVLink
  double nic_bytes = 0;           // sent per rank over its NIC rail
  double ctas = 0;                // NCCL CTAs the algorithm runs on (one SM each), from the profile
  double nvlink_relay_bytes = 0;  // of nvlink_bytes: PXN relay of cross-rail rows (p2p all_to_all)
  double peer_latency_s = 0;      // of latency_s: network messages x the profile's per-peer latency
  int network_messages = 0;       // network sends one rank posts
};

// Flat NCCL ring across every rank (all_reduce, all_gather, reduce_scatter, broadcast).
std::optional<Estimate> ring(const HardwareProfile& hw, const Group& g);
// NCCL tree: intra-node chain + inter-node double binary tree (all_reduce).
std::optional<Estimate> tree(const HardwareProfile& hw, const Group& g);
// NVLink SHARP inside one NVLink domain (all_reduce; all_gather/reduce_scatter if profiled).
std::optional<Estimate> nvls(const HardwareProfile& hw, const Group& g);
// NVLS inside each domain + a tree across domains, pipelined (all_reduce, several domains).
std::optional<Estimate> nvls_tree(const HardwareProfile& hw, const Group& g);
// Phased: intra-node ring phase, inter-node phase on each rail, intra-node phase
// (all_reduce, all_gather, reduce_scatter; several domains with more than one rank each).
std::optional<Estimate> hierarchical(const HardwareProfile& hw, const Group& g);
// Point-to-point exchanges (all_to_all, send_recv). Across nodes an all_to_all takes the profile's
// scale-out fabric and NCCL's PXN relay into account (pxn_relays).
std::optional<Estimate> p2p(const HardwareProfile& hw, const Group& g);
// True when cross-rail all_to_all rows take NCCL's PXN relay: a rail-optimized fabric, and PXN on
// (the request's choice, else the profile's interconnect.inter_node.pxn).
bool pxn_relays(const HardwareProfile& hw, PxnChoice choice);

}  // namespace moesim::collectives
