// DDP without a distributed optimizer: every rank keeps the FP32 main weights and optimizer
// states of all its parameters and updates them itself (18 bytes per parameter under AdamW; seed
// Section 4.3), then casts them to the compute dtype; no weight rebuild. Olmo-core's DDP with
// its distributed optimizer switched off (+nodistopt); its tasks:
// sim/schedules/ddp_distributed_optimizer.cpp.
#include "models/plan/designs/ddp_family.hpp"

namespace moesim {

namespace {

class ReplicatedDdp final : public DdpFamilyDesign {
 public:
  ReplicatedDdp()
      : DdpFamilyDesign("ddp_replicated_optimizer",
                        "DDP without the distributed optimizer (+nodistopt): every rank holds and updates the FP32 "
                        "main weights and optimizer states of all its parameters; no weight rebuild") {}

  bool selected_by(const ParallelPlan& plan) const override { return !plan.distributed_optimizer; }
  NameParts name_parts(const ParallelPlan&) const override { return {"", "+nodistopt"}; }
  std::vector<PlannerFamily> families() const override {
    return {{"ddp-nodistopt",
             true,
             false,
             false,
             true,
             {{&plan_key::design, "ddp"}, {&plan_key::distributed_optimizer, false}}}};
  }
  std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                           OptimizerShardReport& report) const override {
    return replicated_state(tensors, plan, false, report);
  }
  UpdateBuffers update_buffers(const ParallelPlan&, const std::vector<LocalTensor>& tensors) const override {
    return whole_update(tensors, 1.0);
  }
  bool rebuilds_weights(const ParallelPlan&) const override { return false; }
};

}  // namespace

std::unique_ptr<DesignEntry> make_ddp_design() { return std::make_unique<ReplicatedDdp>(); }

}  // namespace moesim
