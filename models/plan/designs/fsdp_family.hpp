// What the FSDP2 designs share (models/plan/designs/fsdp2_*.cpp): the "fsdp" word and its +hsdpN
// and +epN parts, torchtitan's defaults, the rules, FSDP2's sharded persistent state and update,
// and the ledger items of gathered units and unsharded unit gradients. Each design adds how long a
// gathered unit lives. With EP (torchtitan's MoE layout) each rank runs its E / EP experts, and
// their weights are sharded over the experts' shard group (plan.expert_shard_group()).
#pragma once

#include <string>

#include "models/memory/ledger.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/designs/design.hpp"

namespace moesim {

class FsdpFamilyDesign : public DesignEntry {
 public:
  constexpr FsdpFamilyDesign(std::string_view name, std::string_view description)
      : DesignEntry(name, description, "fsdp") {}

  std::vector<std::pair<std::string, std::string>> word_fields() const override;
  std::span<const GrammarPart> parts() const override;
  DesignDefaults defaults() const override;
  void check(const ParallelPlan& plan, const Architecture& arch, const PlanFail& fail) const override;
  std::string planner_refusal(const PlannerDegrees& d) const override;
  std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                           OptimizerShardReport& report) const override;
  UpdateBuffers update_buffers(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors) const override;
  bool rebuilds_weights(const ParallelPlan&) const override { return false; }
  bool bucketed_gradients() const override { return false; }
  bool gradients_made_each_step() const override { return true; }
  // Under a pipeline (accumulates_unsharded) a design that keeps its units gathered moves them
  // once per step; with reshard_after_forward each backward after a forward gathers again.
  bool syncs_every_microbatch(const ParallelPlan& plan) const override {
    return !(accumulates_unsharded(plan) && keeps_gathered_units());
  }
  // Under a pipeline (accumulates_unsharded) every design of the family holds pipelined_items;
  // otherwise what its microbatch_*_items say.
  std::vector<LedgerItem> forward_items(const ParallelPlan& plan, const StageView& view) const final;
  std::vector<LedgerItem> backward_items(const ParallelPlan& plan, const StageView& view,
                                         std::int64_t layer) const final;
  UnitHold unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const override;
  // FSDP2 under a pipeline schedule (torch.distributed.pipelining's backward_maybe_with_nosync
  // and REDUCE_GRAD); FSDP1 is not an FSDPModule there and reduces every microbatch.
  bool accumulates_unsharded(const ParallelPlan& plan) const override {
    return plan.pp > 1 && plan.fsdp_implementation == FsdpImplementation::fsdp2;
  }

 protected:
  // What a forward (a backward of `layer`) holds when gradients are reduced every microbatch.
  // Full reshard's (FSDP2's and FSDP1's): one unit gathered for the layer that runs and `prefetch`
  // more gathered ahead; in backward, the layer's unsharded gradients besides.
  virtual std::vector<LedgerItem> microbatch_forward_items(const ParallelPlan& plan, const StageView& view) const;
  virtual std::vector<LedgerItem> microbatch_backward_items(const ParallelPlan& plan, const StageView& view,
                                                            std::int64_t layer) const;
  // "+hsdpF" when the shard group is smaller than the DP group.
  static std::string hsdp_part(const ParallelPlan& plan);
  // (1 + prefetch) x the largest unit, gathered in the compute dtype.
  static LedgerItem gathered_units(const ParallelPlan& plan, const StageView& view);
  // The unit's gradients in the compute dtype and the reduce-scatter's input in the reduce dtype.
  static LedgerItem unsharded_gradients(const ParallelPlan& plan, const StageView& view, std::int64_t layer);
  // A gathered unit, its gradients and its reduce-scatter input (and under a pipeline its
  // accumulated gradient in the reduce dtype).
  UnitHold gathered_unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const;

 private:
  // Under a pipeline: every unit of the stage gathered and its gradient accumulator, through the
  // step's steady state (each unit is gathered again before its backward and kept, and has an
  // accumulator from its first backward on); in the backward of `layer` (else the forward) the
  // layer's gradient in the compute dtype before it is added in.
  static std::vector<LedgerItem> pipelined_items(const ParallelPlan& plan, const StageView& view,
                                                 const std::int64_t* layer);
};

}  // namespace moesim
