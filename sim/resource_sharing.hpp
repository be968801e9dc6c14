// How tasks running at the same time on one GPU share it: the engine advances time, a
// ResourceSharing policy says what each task asks of its GPU and at what fraction of its solo
// speed it progresses beside the others (SimGrid's split: the model shares resources, the kernel
// advances time). Policies are registered by name with a description and built from the
// hardware profile's numbers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "models/common/registry.hpp"
#include "models/hw/hardware_profile.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

// What one running task (or a collective's members, moving together) asks of its GPU.
struct Demand {
  TaskKind kind = TaskKind::compute;
  LinkClass link = LinkClass::nvlink;  // communication: the link its bytes cross
  // communication over the NIC that also relays rows over NVLink (NCCL PXN): it holds NVLink too,
  // sharing it with the transfers there (the EP's own NVLink rows among them)
  bool also_nvlink = false;
  std::uint32_t sm_ctas = 0;  // communication: SMs its NCCL CTAs hold
  std::uint64_t hbm_Bps = 0;  // communication: HBM traffic at full rate (bytes/s)
};

// What is running on one simulated rank, kept up to date by the engine as tasks start and end.
// Integer sums, so that adding and removing a task leaves them exactly as they were.
struct RunningMix {
  std::uint32_t compute_kernels = 0;                    // GEMMs, attention, fused blocks
  std::uint32_t memory_kernels = 0;                     // HBM-bound kernels
  std::array<std::uint32_t, kLinkClasses> transfers{};  // communication kernels, by link
  std::uint32_t comm_ctas = 0;                          // SMs held by the running NCCL CTAs
  std::uint64_t comm_hbm_Bps = 0;                       // HBM traffic of the running communication

  void add(const Demand& d, int sign);  // inline below: the engine calls it twice per task
  // Field by field (the defaulted one compares the array with a call to memcmp; the engine
  // compares a touched rank's mix before and after every event).
  bool operator==(const RunningMix& o) const {
    return compute_kernels == o.compute_kernels && memory_kernels == o.memory_kernels && comm_ctas == o.comm_ctas &&
           comm_hbm_Bps == o.comm_hbm_Bps && same_transfers(o);
  }

 private:
  bool same_transfers(const RunningMix& o) const {
    for (std::size_t l = 0; l < kLinkClasses; ++l)
      if (transfers[l] != o.transfers[l]) return false;
    return true;
  }
};

inline void RunningMix::add(const Demand& d, int sign) {
  const auto step = static_cast<std::uint32_t>(sign);  // modular: +1 or -1
  switch (d.kind) {
    case TaskKind::compute: compute_kernels += step; break;
    case TaskKind::memory: memory_kernels += step; break;
    case TaskKind::collective:
    case TaskKind::p2p:
      transfers[static_cast<std::size_t>(d.link)] += step;
      if (d.also_nvlink) transfers[static_cast<std::size_t>(LinkClass::nvlink)] += step;
      comm_ctas += step * d.sm_ctas;
      comm_hbm_Bps += static_cast<std::uint64_t>(static_cast<std::int64_t>(sign)) * d.hbm_Bps;
      break;
    default: break;  // host time and copy-engine copies use no SM
  }
}

class ResourceSharing {
 public:
  virtual ~ResourceSharing() = default;
  // What a task asks of its GPU (called once per task or collective when it starts).
  virtual Demand demand_of(const Task& task) const;
  // The rate (1 = as fast as alone) of a task with `demand` on a rank running `mix`; the mix
  // includes the task itself.
  virtual double rate(const RunningMix& mix, const Demand& demand) const = 0;

 protected:
  // A transfer's equal share of the links it holds: the tightest of them.
  static double link_share(const RunningMix& mix, const Demand& demand);
  // 1 / n for n >= 1: the same division, looked up for the small counts of a rank's running mix
  // (a re-rate asks for a few of them, and a division is the slowest step of a rate).
  static double inverse(std::uint32_t n) {
    static constexpr std::uint32_t kTabulated = 64;
    static constexpr auto table = [] {
      std::array<double, kTabulated> t{};
      for (std::uint32_t k = 1; k < kTabulated; ++k) t[k] = 1.0 / static_cast<double>(k);
      return t;
    }();
    return n < kTabulated ? table[n] : 1.0 / static_cast<double>(n);
  }
};

class ResourceSharingModel : public Registered {
 public:
  using Registered::Registered;
  virtual std::unique_ptr<ResourceSharing> make(const HardwareProfile& hw) const = 0;
};

const Registry<ResourceSharingModel>& resource_sharing_models();  // "sm_hbm_share" (default), "fair_share"

// The "fair_share" rule with an explicit interference fraction (engine tests).
std::unique_ptr<ResourceSharing> fair_share(double compute_slowdown_with_comm);

}  // namespace moesim
