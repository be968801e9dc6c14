#include "sim/resource_sharing.hpp"

#include <algorithm>

namespace moesim {

namespace {

// Transfers on one link class share its bandwidth equally; kernels share the SMs equally and all
// of them slow down by the interference fraction while any communication kernel runs on the GPU
// (report Table 9: grouped GEMM 23-27% slower beside dispatch/combine kernels).
class FairShare final : public ResourceSharing {
 public:
  explicit FairShare(double compute_slowdown_with_comm) : slowdown_(compute_slowdown_with_comm) {}

  double rate(const RunningMix& mix, const Demand& demand) const override {
    if (demand.communication) {
      return 1.0 / std::max<std::uint32_t>(mix.transfers[static_cast<std::size_t>(demand.link)], 1);
    }
    bool communication_here = false;
    for (const std::uint32_t n : mix.transfers) communication_here = communication_here || n > 0;
    return 1.0 / std::max<std::uint32_t>(mix.kernels, 1) / (communication_here ? 1.0 + slowdown_ : 1.0);
  }

 private:
  double slowdown_;
};

class FairShareModel final : public ResourceSharingModel {
 public:
  FairShareModel()
      : ResourceSharingModel(
            "fair_share",
            "Equal shares of each link among its transfers and of the SMs among kernels; kernels slow by the "
            "profile's interference.compute_slowdown_with_comm while communication runs") {}
  std::unique_ptr<ResourceSharing> make(const HardwareProfile& hw) const override {
    return fair_share(hw.interference.compute_slowdown_with_comm.value);
  }
};

}  // namespace

std::unique_ptr<ResourceSharing> fair_share(double compute_slowdown_with_comm) {
  return std::make_unique<FairShare>(compute_slowdown_with_comm);
}

const Registry<ResourceSharingModel>& resource_sharing_models() {
  static const auto registry = make_registry<ResourceSharingModel, FairShareModel>("resource sharing model");
  return registry;
}

}  // namespace moesim
