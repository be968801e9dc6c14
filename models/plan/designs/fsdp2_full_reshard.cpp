// FSDP2 full reshard, the Olmo-core report's baseline (seed Section 4): every parameter sharded
// on dim 0 over the shard group (the DP group, or F ranks under HSDP with a replica all-reduce),
// each unit (a block; the embedding and the LM head their own) gathered for its forward, freed,
// gathered again for its backward, and its gradient reduce-scattered every microbatch
// (torch/distributed/fsdp/_fully_shard, reshard_after_forward=True). Its tasks:
// sim/schedules/fsdp2_full_reshard.cpp.
#include "models/plan/designs/fsdp_family.hpp"

namespace moesim {

namespace {

class Fsdp2FullReshard final : public FsdpFamilyDesign {
 public:
  Fsdp2FullReshard()
      : FsdpFamilyDesign(
            "fsdp2_full_reshard",
            "FSDP2 full reshard: sharded parameters, gradients and optimizer states; each unit gathered "
            "for its forward and again for its backward, gradients reduce-scattered every microbatch "
            "(HSDP: +hsdpN shards over N ranks and all-reduces across replicas; +epN: each rank's routed experts "
            "sharded over their own group, torchtitan's MoE layout)") {}

  bool selected_by(const ParallelPlan& plan) const override {
    return plan.fsdp_implementation == FsdpImplementation::fsdp2 && plan.fsdp_reshard_after_forward;
  }
  NameParts name_parts(const ParallelPlan& plan) const override { return {hsdp_part(plan), ""}; }
  std::vector<PlannerFamily> families() const override {
    PlannerFamily fsdp{"fsdp", true, false,
                       false,  true, {{&plan_key::design, "fsdp"}, {&plan_key::fsdp_shard_degree, 0}}};
    PlannerFamily hsdp{"hsdp", true, true, false, true, {{&plan_key::design, "fsdp"}}};
    return {fsdp, hsdp};
  }

  std::string_view param_sync() const override { return "fsdp2_full_reshard"; }
};

}  // namespace

std::unique_ptr<DesignEntry> make_fsdp2_full_reshard_design() { return std::make_unique<Fsdp2FullReshard>(); }

}  // namespace moesim
