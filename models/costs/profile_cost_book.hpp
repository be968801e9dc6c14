// The cost book of a hardware profile: the registered cost models chosen by name (the scenario's
// `cost_models` block; defaults: GEMM "table", grouped GEMM "table", attention "flash", memory
// "hbm", collectives "nccl").
#pragma once

#include <string>
#include <vector>

#include "models/costs/cost_book.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim {

// The resource-sharing policies a scenario may name (`cost_models.resource_sharing`): the names
// and descriptions are inputs, checked when a scenario is composed; the engine implements each
// (sim/resource_sharing.hpp registers one model per entry, and a test holds the two lists equal).
struct ResourceSharingPolicy {
  std::string_view name;
  std::string_view description;
};
inline constexpr ResourceSharingPolicy kResourceSharingPolicies[] = {
    {"fair_share",
     "Equal shares of each link among its transfers and of the SMs among kernels; kernels slow by the profile's "
     "interference.compute_slowdown_with_comm while communication runs"},
    {"sm_hbm_share",
     "NCCL CTAs hold whole SMs; memory kernels and communication traffic share HBM; transfers share links; "
     "collectives slow beside compute kernels (profile interference section)"}};
inline constexpr std::string_view kDefaultResourceSharing = "sm_hbm_share";

// The policy named `name`; throws UnknownNameError listing the valid names.
const ResourceSharingPolicy& resource_sharing_policy(std::string_view name);

// Every model a scenario picks by name (its `cost_models` block).
struct CostModelChoice {
  std::string gemm{kDefaultGemmCost};
  std::string grouped_gemm{kDefaultGroupedGemmCost};
  std::string attention{kDefaultAttentionCost};
  std::string memory{kDefaultMemoryBoundCost};
  std::string collective{kDefaultCollectiveModel};
  std::string resource_sharing{kDefaultResourceSharing};
};

class ProfileCostBook final : public CostBook {
 public:
  // Throws UnknownNameError (listing the valid names) for an unknown model.
  explicit ProfileCostBook(const HardwareProfile& hw, const CostModelChoice& choice = {});
  // The book keeps a reference to the profile: a temporary one would dangle.
  explicit ProfileCostBook(HardwareProfile&& hw, const CostModelChoice& choice = {}) = delete;

  double gemm(const GemmShape& shape) const override;
  double grouped_gemm(const GroupedGemmShape& shape) const override;
  double attention(const AttentionShape& shape, bool backward) const override;
  double scan(const ScanShape& shape, bool backward) const override;
  double memory(double bytes, MemoryKernel kind) const override;
  CommCost collective(const CollectiveRequest& request) const override;
  CommCost ep_transfer(EpTransport transport, const EpTransferRequest& request) const override;
  double step_host_s() const override;
  double host_copy_s(double bytes) const override;

 private:
  const HardwareProfile& hw_;
  const GemmCost& gemm_;
  const GroupedGemmCost& grouped_;
  const AttentionCost& attention_;
  const MemoryBoundCost& memory_;
  const CollectiveModel& collective_;
  // Collectives priced so far: a step bound or a step build asks for the same request many times
  // (equal gradient buckets on every stage, each layer's TP collectives), and each price runs the
  // collective model's algorithm search. A book serves one thread (each simulation, screening
  // and `moesim cost` makes its own).
  struct PricedCollective {
    CollectiveRequest request;
    CommCost cost;
  };
  mutable std::vector<PricedCollective> priced_;
};

}  // namespace moesim
