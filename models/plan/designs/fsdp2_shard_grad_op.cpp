// FSDP2 with reshard_after_forward=False (fully_shard's flag; FSDP1's ShardingStrategy.SHARD_GRAD_OP;
// the seed's Appendix B.3): each unit is gathered once per microbatch for its forward and stays
// gathered until its backward has run (FSDPParamGroup.post_forward leaves it unsharded;
// post_backward reshards it), so the backward gathers nothing and a stage holds every unit it
// has run forward at once. Chosen by plan.fsdp.reshard_after_forward = false (+noreshard). Its
// tasks: sim/schedules/fsdp2_full_reshard.cpp, strategy fsdp2_shard_grad_op.
#include <limits>

#include "models/plan/designs/fsdp_family.hpp"

namespace moesim {

namespace {

class Fsdp2ShardGradOp final : public FsdpFamilyDesign {
 public:
  Fsdp2ShardGradOp()
      : FsdpFamilyDesign("fsdp2_shard_grad_op",
                         "FSDP2 without reshard_after_forward (+noreshard; FSDP1 SHARD_GRAD_OP): each unit gathered "
                         "once per microbatch and kept from its forward to its backward; half the all-gathers of full "
                         "reshard for the whole stage's weights held at the turn") {}

  bool selected_by(const ParallelPlan& plan) const override {
    return plan.fsdp_implementation == FsdpImplementation::fsdp2 && !plan.fsdp_reshard_after_forward;
  }
  NameParts name_parts(const ParallelPlan& plan) const override { return {hsdp_part(plan), "+noreshard"}; }
  std::vector<PlannerFamily> families() const override {
    return {{"fsdp-noreshard",
             false,
             false,
             false,
             true,
             {{&plan_key::design, "fsdp"},
              {&plan_key::fsdp_shard_degree, 0},
              {&plan_key::fsdp_reshard_after_forward, false}}}};
  }

  bool keeps_gathered_units() const override { return true; }
  std::string_view param_sync() const override { return "fsdp2_shard_grad_op"; }

 protected:
  // At the end of a forward every unit of the stage is gathered.
  std::vector<LedgerItem> microbatch_forward_items(const ParallelPlan& plan, const StageView& view) const override {
    return {held_units(plan, view, std::numeric_limits<std::int64_t>::max())};
  }
  // In the backward of `layer`, the units before it (and the embedding) are still gathered.
  std::vector<LedgerItem> microbatch_backward_items(const ParallelPlan& plan, const StageView& view,
                                                    std::int64_t layer) const override {
    return {held_units(plan, view, layer), unsharded_gradients(plan, view, layer)};
  }

 private:
  // Every unit of the stage up to `last` (by index: the embedding -1 first) in the compute dtype.
  static LedgerItem held_units(const ParallelPlan& plan, const StageView& view, std::int64_t last) {
    double numel = 0;
    for (const auto& [unit, n] : view.unit_numel) {
      if (unit <= last) numel += n;
    }
    return {"gathered units (kept from forward to backward)", MemClass::fsdp_materialized,
            numel * bytes_of(plan.precision.compute),
            "every unit of the stage not yet back-propagated x compute dtype"};
  }
};

}  // namespace

std::unique_ptr<DesignEntry> make_fsdp2_shard_grad_op_design() { return std::make_unique<Fsdp2ShardGradOp>(); }

}  // namespace moesim
