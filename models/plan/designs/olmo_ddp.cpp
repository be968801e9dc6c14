// Olmo-core DDP with the distributed optimizer (seed Section 4; olmo_core/nn/parallel/distributed.py
// MultiGroupDistributedDataParallel, olmo_core/optim/moe_optimizer.py OLMoDDPOptimizer): static
// BF16 compute-weight replicas, no_sync accumulation into FP32 buckets, one bucketed reduction per
// step, FP32 main weights and optimizer states sharded per tensor within each replica group (DP,
// or EP-DP for routed experts), and a coalesced all-gather rebuilding the compute weights. Its
// tasks: sim/schedules/ddp_distributed_optimizer.cpp.
#include "models/plan/designs/ddp_family.hpp"

namespace moesim {

namespace {

class OlmoDdp final : public DdpFamilyDesign {
 public:
  OlmoDdp()
      : DdpFamilyDesign("olmo_ddp",
                        "Olmo-core DDP + distributed optimizer: replicated BF16 weights, FP32 bucket accumulation, "
                        "one bucketed reduction per step, main weights and optimizer states sharded per replica "
                        "group, coalesced BF16 weight rebuild (+epN for expert parallelism)") {}

  bool selected_by(const ParallelPlan& plan) const override { return plan.distributed_optimizer; }
  NameParts name_parts(const ParallelPlan&) const override { return {}; }
  std::vector<PlannerFamily> families() const override {
    return {{"ddp", true, false, true, true, {{&plan_key::design, "ddp"}, {&plan_key::distributed_optimizer, true}}}};
  }
  std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                           OptimizerShardReport& report) const override {
    return replicated_state(tensors, plan, true, report);
  }
  UpdateBuffers update_buffers(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors) const override {
    return sharded_update(plan, tensors);
  }
  bool rebuilds_weights(const ParallelPlan&) const override { return true; }
};

}  // namespace

std::unique_ptr<DesignEntry> make_olmo_ddp_design() { return std::make_unique<OlmoDdp>(); }

}  // namespace moesim
