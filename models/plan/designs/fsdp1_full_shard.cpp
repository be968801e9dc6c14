// FSDP1 (torch.distributed.fsdp.FullyShardedDataParallel) with ShardingStrategy.FULL_SHARD, as
// Composer wraps llm-foundry's models (composer/utils/parallelism.py FSDPConfig: FULL_SHARD,
// use_orig_params, limit_all_gathers, backward_prefetch BACKWARD_POST, no forward prefetch): one
// flat parameter per unit, sharded over the shard group, gathered for its forward and again for
// its backward, its flat gradient reduce-scattered every microbatch. The memory is FSDP2 full
// reshard's (one unit gathered ahead: the rate limiter's two in flight); the placement differs
// (flat parameters need no copy-in copy, no copy-out and no reduce-scatter copy-in; the
// gradient is divided before and after the reduce-scatter). Chosen by plan.fsdp.implementation
// "fsdp1" (+fsdp1). Its tasks: sim/schedules/fsdp1_full_shard.cpp.
#include "models/arch/architecture.hpp"
#include "models/plan/designs/fsdp_family.hpp"

namespace moesim {

namespace {

class Fsdp1FullShard final : public FsdpFamilyDesign {
 public:
  Fsdp1FullShard()
      : FsdpFamilyDesign("fsdp1_full_shard",
                         "FSDP1 FULL_SHARD (+fsdp1; Composer's FSDP): one flat parameter per unit, gathered for its "
                         "forward and again for its backward under the all-gather rate limiter, flat gradients "
                         "pre-divided, reduce-scattered and post-divided every microbatch") {}

  bool selected_by(const ParallelPlan& plan) const override {
    return plan.fsdp_implementation == FsdpImplementation::fsdp1;
  }
  NameParts name_parts(const ParallelPlan& plan) const override { return {hsdp_part(plan), "+fsdp1"}; }
  std::vector<PlannerFamily> families() const override {
    return {
        {"fsdp1",
         false,
         false,
         false,
         false,
         {{&plan_key::design, "fsdp"}, {&plan_key::fsdp_shard_degree, 0}, {&plan_key::fsdp_implementation, "fsdp1"}}}};
  }

  void check(const ParallelPlan& plan, const Architecture& arch, const PlanFail& fail) const override {
    FsdpFamilyDesign::check(plan, arch, fail);
    if (!plan.fsdp_reshard_after_forward) {
      fail("fsdp.reshard_after_forward",
           "false with FSDP1 (its SHARD_GRAD_OP) is not modelled; FSDP2's is (plan.fsdp.implementation \"fsdp2\", "
           "design \"fsdp+noreshard\")");
    }
    if (plan.ep > 1) {
      // One flat parameter per unit holds the unit's experts with the rest: FSDP1 has no
      // per-parameter mesh to shard the experts over their own group as torchtitan's FSDP2 does.
      fail("expert_parallel.degree",
           "EP with FSDP1 is not modelled (allowed: 1); EP with FSDP runs with plan.fsdp.implementation \"fsdp2\"");
    }
  }

  std::string_view param_sync() const override { return "fsdp1_full_shard"; }
};

}  // namespace

std::unique_ptr<DesignEntry> make_fsdp1_full_shard_design() { return std::make_unique<Fsdp1FullShard>(); }

}  // namespace moesim
