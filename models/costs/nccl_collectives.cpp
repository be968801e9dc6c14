// "nccl": NCCL-style collective cost. Each algorithm's time is a latency (a base per call plus a
// per-step hop latency over NVLink or the network) plus the bytes on its bottleneck link over that
// link's achieved bandwidth — the structure of NCCL's own tuning model (NVIDIA/nccl
// src/graph/tuning.cc: time = latency + bytes / algorithm bandwidth). Every constant lives in the
// profile's `interconnect` section; see hardware_profiles/README.md.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"
#include "models/common/units.hpp"
#include "models/costs/collective_algorithms.hpp"
#include "models/costs/collective_model.hpp"

namespace moesim {

int ranks_per_domain(const HardwareProfile& hw, int ranks, int ranks_per_node) {
  const int domain = static_cast<int>(hw.interconnect.intra_node.domain_gpus.value);
  int r = ranks_per_node;
  if (r == 0) {
    r = std::min(ranks, domain);
    if (ranks % r != 0) {
      throw InputError("", "ranks_per_node",
                       std::to_string(ranks) + " ranks do not fill NVLink domains of " + std::to_string(domain) +
                           " GPUs evenly; give ranks_per_node");
    }
  }
  if (r < 1 || r > ranks) {
    throw InputError("", "ranks_per_node", "must be between 1 and ranks (" + std::to_string(ranks) + ")");
  }
  if (r > domain) {
    throw InputError("", "ranks_per_node",
                     std::to_string(r) + " exceeds the " + std::to_string(domain) +
                         " GPUs of one NVLink domain in hardware profile " + hw.name);
  }
  if (ranks % r != 0) {
    throw InputError("", "ranks_per_node", "must divide ranks (" + std::to_string(ranks) + ")");
  }
  return r;
}

namespace {
using collectives::Estimate;
using collectives::Group;

Group make_group(const HardwareProfile& hw, const CollectiveRequest& req) {
  if (req.ranks < 1) throw InputError("", "ranks", "the group needs at least 1 rank");
  if (!(req.bytes >= 0) || !std::isfinite(req.bytes)) {
    throw InputError("", "bytes", "must be a finite number >= 0");
  }
  const int r = ranks_per_domain(hw, req.ranks, req.ranks_per_node);
  Group g;
  g.kind = req.kind;
  g.bytes = req.bytes;
  g.n = req.ranks;
  g.r = r;
  g.m = req.ranks / r;
  g.pxn = req.pxn;
  return g;
}

struct Candidate {
  std::string_view name;
  std::function<std::optional<Estimate>(const HardwareProfile&, const Group&)> estimate;
};

const std::vector<Candidate>& candidates() {
  static const std::vector<Candidate> list = {
      {"ring", collectives::ring},
      {"tree", collectives::tree},
      {"nvls", collectives::nvls},
      {"nvls_tree", collectives::nvls_tree},
      {"hierarchical", collectives::hierarchical},
      {"p2p", collectives::p2p},
  };
  return list;
}

std::string join(const std::vector<std::string>& names) {
  const std::string out = comma_joined(names);
  return out.empty() ? "(none)" : out;
}

CollectiveCost to_cost(std::string_view name, const Group& g, const Estimate& e) {
  CollectiveCost c;
  c.algorithm = std::string(name);
  c.latency_s = e.latency_s;
  c.time_s = e.latency_s + e.bandwidth_s;
  c.algbw_GBps = c.time_s > 0 ? g.bytes / c.time_s / kGB : 0;
  c.busbw_GBps = c.algbw_GBps * busbw_factor(g.kind, g.n);
  c.nvlink_bytes_per_rank = e.nvlink_bytes;
  c.nic_bytes_per_rank = e.nic_bytes;
  c.nvlink_relay_bytes_per_rank = e.nvlink_relay_bytes;
  c.peer_latency_s = e.peer_latency_s;
  c.network_messages = e.network_messages;
  c.nodes = g.m;
  c.ranks_per_node = g.r;
  c.ctas = static_cast<int>(e.ctas);
  return c;
}

class NcclCollectiveModel final : public CollectiveModel {
 public:
  NcclCollectiveModel()
      : CollectiveModel(
            "nccl",
            "NCCL ring, tree, NVLS, NVLS-tree, hierarchical and P2P algorithms from the profile's link latencies and "
            "bandwidths; the fastest available") {}

  std::vector<std::string> algorithms(const HardwareProfile& hw, const CollectiveRequest& req) const override {
    const Group g = make_group(hw, req);
    std::vector<std::string> out;
    if (g.n == 1) return out;
    for (const auto& c : candidates()) {
      if (c.estimate(hw, g)) out.emplace_back(c.name);
    }
    return out;
  }

  CollectiveCost cost(const HardwareProfile& hw, const CollectiveRequest& req) const override {
    const Group g = make_group(hw, req);
    if (!req.algorithm.empty()) check_known(req.algorithm);
    if (g.n == 1) {  // nothing leaves the GPU
      CollectiveCost c;
      c.algorithm = "none";
      return c;
    }
    std::optional<CollectiveCost> best;
    for (const auto& c : candidates()) {
      if (!req.algorithm.empty() && c.name != req.algorithm) continue;
      const auto e = c.estimate(hw, g);
      if (!e) continue;
      CollectiveCost cost = to_cost(c.name, g, *e);
      if (!best || cost.time_s < best->time_s) best = cost;
    }
    if (!best) {
      throw InputError("", "algorithm",
                       "\"" + req.algorithm + "\" cannot run " + std::string(name_of(req.kind)) + " on " +
                           std::to_string(g.n) + " ranks (" + std::to_string(g.m) + " x " + std::to_string(g.r) +
                           ") with hardware profile " + hw.name + "; available: " + join(algorithms(hw, req)));
    }
    return *best;
  }

 private:
  static void check_known(const std::string& algorithm) {
    std::vector<std::string> names;
    for (const auto& c : candidates()) {
      if (c.name == algorithm) return;
      names.emplace_back(c.name);
    }
    throw UnknownNameError("unknown collective algorithm \"" + algorithm + "\"; valid: " + join(names));
  }
};
}  // namespace

PxnChoice parse_pxn_choice(std::string_view name) { return kPxnChoiceNames.parse(name); }

const std::vector<CollectiveKind>& all_collective_kinds() {
  static const std::vector<CollectiveKind> kinds = [] {
    std::vector<CollectiveKind> out;
    for (const auto& entry : kCollectiveKindNames.entries()) out.push_back(entry.first);
    return out;
  }();
  return kinds;
}

CollectiveKind parse_collective_kind(std::string_view name) {
  if (name == "alltoall") return CollectiveKind::all_to_all;  // the nccl-tests binary's name (alltoall_perf)
  return kCollectiveKindNames.parse(name);
}

// nccl-tests doc/PERFORMANCE.md: the factor that turns algbw into the per-link bus bandwidth.
double busbw_factor(CollectiveKind k, int ranks) {
  if (ranks <= 1) return 0.0;
  const double n = ranks;
  switch (k) {
    case CollectiveKind::all_reduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all: return (n - 1) / n;
    case CollectiveKind::send_recv:
    case CollectiveKind::broadcast: return 1.0;
  }
  return 0.0;
}

const Registry<CollectiveModel>& collective_models() {
  static const auto registry = make_registry<CollectiveModel, NcclCollectiveModel>("collective model");
  return registry;
}

}  // namespace moesim
