#include "models/plan/designs/ddp_family.hpp"

#include <string>

#include "models/memory/persistent_state.hpp"

namespace moesim {

namespace {
constexpr GrammarPart kDdpParts[] = {{"ep", "plan.expert_parallel.degree", true, ""},
                                     {"etp", "plan.expert_parallel.tensor_degree", true, ""},
                                     {"nodistopt", "plan.ddp.distributed_optimizer", false, "false"}};
}  // namespace

std::vector<std::pair<std::string, std::string>> DdpFamilyDesign::word_fields() const {
  return {{"plan.design", "\"ddp\""}, {"plan.expert_parallel.degree", "1"}, {"plan.pipeline.degree", "1"}};
}

std::span<const GrammarPart> DdpFamilyDesign::parts() const { return kDdpParts; }

// Olmo-core's DDP: EP on its production rowwise NVSHMEM path (symmetric buffers,
// olmo_core/nn/moe/v2/ep_config.py), its own foreach AdamW on the shard
// (OLMoDDPOptimizer._step_foreach), low-precision weight caches (seed 4.4.3).
// Megatron-LM's rules for its overlap switches (megatron/training/arguments.py validate_args): the
// parameter all-gather overlaps only together with the gradient reduction, and it gathers into
// Megatron-Core's contiguous parameter buffer. Without the distributed optimizer nothing is
// gathered and the switch has no effect (a stack preset may set it for every DDP plan).
void DdpFamilyDesign::check(const ParallelPlan& plan, const Architecture&, const PlanFail& fail) const {
  if (!plan.overlap_param_gather || !plan.distributed_optimizer) return;
  if (!plan.overlap_grad_reduce) {
    fail("ddp.overlap_param_gather",
         "true needs plan.ddp.overlap_grad_reduce true (Megatron-LM: 'Must use --overlap-param-gather with "
         "--overlap-grad-reduce'); set both, or overlap_param_gather false");
  } else if (plan.optimizer.rebuild != WeightRebuild::in_place) {
    fail("ddp.overlap_param_gather",
         "true gathers each bucket into the parameter buffer in place (Megatron-Core's param_and_grad_buffer); set "
         "plan.optimizer.weight_rebuild to \"in_place\" (now \"" +
             std::string(name_of(plan.optimizer.rebuild)) + "\")");
  }
}

DesignDefaults DdpFamilyDesign::defaults() const {
  return {EpTransport::symmetric_memory, OptimizerKernels::olmo_core_foreach, true};
}

std::vector<LedgerItem> DdpFamilyDesign::backward_items(const ParallelPlan& plan, const StageView& view,
                                                        std::int64_t layer) const {
  return {{"weight gradient (one tensor)", MemClass::weight_grad_transient, unit_hold(plan, view, layer).weight_grad,
           plan.grad_accumulation_fusion
               ? "none: the weight-gradient GEMMs accumulate into the FP32 bucket (grad_accumulation_fusion)"
               : "largest local tensor of the layer in compute dtype, added to its FP32 bucket, freed"}};
}

UnitHold DdpFamilyDesign::unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const {
  UnitHold hold;
  if (plan.grad_accumulation_fusion) return hold;  // the GEMM writes into the bucket
  hold.weight_grad =
      (view.largest_local.count(unit) ? view.largest_local.at(unit) : 0.0) * bytes_of(plan.precision.compute);
  return hold;
}

std::vector<LedgerItem> DdpFamilyDesign::replicated_state(const std::vector<LocalTensor>& tensors,
                                                          const ParallelPlan& plan, bool sharded_optimizer,
                                                          OptimizerShardReport& report) {
  std::vector<LedgerItem> items;
  add_compute_weights(tensors, plan, items);
  add_gradient_buckets(tensors, plan, items);
  add_optimizer_state(tensors, plan, sharded_optimizer, items, report);
  return items;
}

}  // namespace moesim
