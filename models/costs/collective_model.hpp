// Time of one NCCL collective on a hardware profile. Byte counts follow nccl-tests
// (NVIDIA/nccl-tests doc/PERFORMANCE.md): `bytes` is the per-rank buffer size —
//   all_reduce      the buffer (input = output),
//   all_gather      the OUTPUT (every rank ends with `bytes`; it contributed bytes / ranks),
//   reduce_scatter  the INPUT (every rank ends with bytes / ranks),
//   all_to_all      the total send buffer per rank (bytes / ranks to each peer, itself included),
//   broadcast       the buffer,
//   send_recv       what each rank sends to its one peer.
// algbw = bytes / time; busbw = algbw x 2(n-1)/n (all_reduce), x (n-1)/n (all_gather,
// reduce_scatter, all_to_all), x 1 (broadcast, send_recv) — the nccl-tests formulas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/registry.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim {

enum class CollectiveKind : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };
inline constexpr std::size_t kCollectiveKinds = static_cast<std::size_t>(CollectiveKind::broadcast) + 1;  // the last one

std::string_view name_of(CollectiveKind k);
// Throws UnknownNameError listing the valid kinds.
CollectiveKind parse_collective_kind(std::string_view name);
const std::vector<CollectiveKind>& all_collective_kinds();

// nccl-tests' bus-bandwidth factor: busbw = algbw x factor.
double busbw_factor(CollectiveKind k, int ranks);

struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes = 0;        // nccl-tests convention above
  int ranks = 1;           // group size
  int ranks_per_node = 0;  // group ranks sharing one NVLink domain; 0: min(ranks, domain size)
  std::string algorithm;   // "" = the fastest available; else forced (error if unavailable)
};

struct CollectiveCost {
  std::string algorithm;              // the one used ("none" for a group of one)
  double time_s = 0;
  double latency_s = 0;               // the fixed part of time_s
  double algbw_GBps = 0;              // bytes / time, GB = 1e9
  double busbw_GBps = 0;              // algbw x busbw_factor
  double nvlink_bytes_per_rank = 0;   // sent by one rank over NVLink
  double nic_bytes_per_rank = 0;      // sent by one rank over its NIC rail
  int nodes = 1;                      // NVLink domains the group spans
  int ranks_per_node = 1;             // group ranks in each of them (as resolved)
};

class CollectiveModel {
 public:
  virtual ~CollectiveModel() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for `moesim cost --list`
  // Algorithms that can run this request on this profile, in a fixed order.
  virtual std::vector<std::string> algorithms(const HardwareProfile& hw,
                                              const CollectiveRequest& req) const = 0;
  // The forced algorithm, or the fastest available one (ties: the first in algorithms()).
  virtual CollectiveCost cost(const HardwareProfile& hw, const CollectiveRequest& req) const = 0;
};

const Registry<CollectiveModel>& collective_models();  // "nccl"
inline constexpr std::string_view kDefaultCollectiveModel = "nccl";

}  // namespace moesim
