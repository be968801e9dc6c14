// The cost book of a hardware profile: the registered cost models chosen by name (defaults:
// GEMM "table", grouped GEMM "table", attention "flash", memory "hbm", collectives "nccl").
#pragma once

#include <string>

#include "models/costs/collective_model.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/hw/hardware_profile.hpp"
#include "sim/cost_book.hpp"

namespace moesim {

struct CostModelChoice {
  std::string gemm{kDefaultGemmCost};
  std::string grouped_gemm{kDefaultGroupedGemmCost};
  std::string attention{kDefaultAttentionCost};
  std::string memory{kDefaultMemoryBoundCost};
  std::string collective{kDefaultCollectiveModel};
};

class ProfileCostBook final : public CostBook {
 public:
  // Throws UnknownNameError (listing the valid names) for an unknown model.
  ProfileCostBook(const HardwareProfile& hw, const CostModelChoice& choice = {});

  double gemm(double m, double n, double k) const override;
  double grouped_gemm(const std::vector<double>& rows, double n, double k) const override;
  double attention(double tokens, double seq, double heads, double kv_heads, double head_dim, bool backward) const override;
  double memory(double bytes) const override;
  CommCost collective(CollectiveKindTag kind, double bytes, std::int64_t group, std::int64_t per_node) const override;
  double compute_slowdown_with_comm() const override;

 private:
  const HardwareProfile& hw_;
  const GemmCost& gemm_;
  const GroupedGemmCost& grouped_;
  const AttentionCost& attention_;
  const MemoryBoundCost& memory_;
  const CollectiveModel& collective_;
};

}  // namespace moesim
