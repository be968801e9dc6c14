// What the DDP designs share (models/plan/designs/olmo_ddp.cpp, ddp.cpp): the "ddp" word and its
// +epN and +nodistopt parts, Olmo-core's defaults, replicated BF16 compute weights with flat FP32
// gradient buckets, and the one weight gradient backward makes before it joins its bucket. Each
// design adds where the main weights and optimizer states live.
#pragma once

#include "models/memory/ledger.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/designs/design.hpp"

namespace moesim {

class DdpFamilyDesign : public DesignEntry {
 public:
  constexpr DdpFamilyDesign(std::string_view name, std::string_view description)
      : DesignEntry(name, description, "ddp") {}

  std::vector<std::pair<std::string, std::string>> word_fields() const override;
  std::span<const GrammarPart> parts() const override;
  DesignDefaults defaults() const override;
  void check(const ParallelPlan& plan, const Architecture&, const PlanFail& fail) const override;
  std::vector<LedgerItem> forward_items(const ParallelPlan&, const StageView&) const override { return {}; }
  std::vector<LedgerItem> backward_items(const ParallelPlan& plan, const StageView& view,
                                         std::int64_t layer) const override;
  UnitHold unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const override;
  bool bucketed_gradients() const override { return true; }
  bool gradients_made_each_step() const override { return false; }
  bool syncs_every_microbatch(const ParallelPlan&) const override { return false; }
  std::string_view param_sync() const override { return "ddp_distributed_optimizer"; }

 protected:
  // Compute weights (and caches), gradient buckets, then main weights and states, sharded or not.
  static std::vector<LedgerItem> replicated_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                                  bool sharded_optimizer, OptimizerShardReport& report);
};

}  // namespace moesim
