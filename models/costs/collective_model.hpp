// Time of one NCCL collective on a hardware profile; byte counts as in cost_types.hpp.
// algbw = bytes / time; busbw = algbw x 2(n-1)/n (all_reduce), x (n-1)/n (all_gather,
// reduce_scatter, all_to_all), x 1 (broadcast, send_recv) — the nccl-tests formulas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/cost_types.hpp"
#include "models/common/registry.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim {

// nccl-tests' bus-bandwidth factor: busbw = algbw x factor.
double busbw_factor(CollectiveKind k, int ranks);

// The ranks of a group of `ranks` in each NVLink domain: `ranks_per_node`, or (0) as many as one
// domain of the profile holds. Throws InputError (path "ranks_per_node") when that count is
// outside [1, ranks], exceeds a domain, or does not tile the group into whole domains.
int ranks_per_domain(const HardwareProfile& hw, int ranks, int ranks_per_node);

class CollectiveModel : public Registered {
 public:
  using Registered::Registered;
  // Algorithms that can run this request on this profile, in a fixed order.
  virtual std::vector<std::string> algorithms(const HardwareProfile& hw, const CollectiveRequest& req) const = 0;
  // The forced algorithm, or the fastest available one (ties: the first in algorithms()).
  virtual CollectiveCost cost(const HardwareProfile& hw, const CollectiveRequest& req) const = 0;
};

const Registry<CollectiveModel>& collective_models();  // "nccl"
inline constexpr std::string_view kDefaultCollectiveModel = "nccl";

}  // namespace moesim
