// How tasks running at the same time on one GPU share it: the engine advances time, a
// ResourceSharing policy says at what fraction of its solo speed each running task progresses
// (SimGrid's split: the model shares resources, the kernel advances time). Policies are
// registered by name with a description and built from the hardware profile's numbers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "models/common/registry.hpp"
#include "models/hw/hardware_profile.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

// The tasks running on one simulated rank: kernels on the SMs, transfers on each link class.
struct RunningMix {
  std::uint32_t kernels = 0;                            // compute and memory-bound kernels
  std::array<std::uint32_t, kLinkClasses> transfers{};  // communication kernels, by the link they use
};

// What a running task (or a collective's members, moving together) asks of a rank.
struct Demand {
  bool communication = false;
  LinkClass link = LinkClass::nvlink;  // for communication
};

class ResourceSharing {
 public:
  virtual ~ResourceSharing() = default;
  // The rate (1 = as fast as alone) of a task with `demand` on a rank running `mix`; the mix
  // includes the task itself.
  virtual double rate(const RunningMix& mix, const Demand& demand) const = 0;
};

class ResourceSharingModel : public Registered {
 public:
  using Registered::Registered;
  virtual std::unique_ptr<ResourceSharing> make(const HardwareProfile& hw) const = 0;
};

const Registry<ResourceSharingModel>& resource_sharing_models();  // "fair_share" (the default)

// The "fair_share" rule with an explicit interference fraction (engine tests).
std::unique_ptr<ResourceSharing> fair_share(double compute_slowdown_with_comm);

}  // namespace moesim
