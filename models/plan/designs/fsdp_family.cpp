#include "models/plan/designs/fsdp_family.hpp"

#include "models/arch/architecture.hpp"
#include "models/memory/persistent_state.hpp"
#include "models/plan/sync_free.hpp"

namespace moesim {

namespace {

// torchtitan's EP borrows from the shard group's ranks (parallel_dims.py: dp_shard x cp x tp must
// be a multiple of EP); the HSDP replicas hold copies.
bool ep_divides_shard_group(std::int64_t ep, std::int64_t shard_group, std::int64_t tp) {
  return ep <= 1 || (shard_group * tp) % ep == 0;
}

// Megatron-Core's combined 1F1B overlaps one microbatch's EP all-to-alls with another's compute;
// FSDP gathers and frees each unit around its own pass, so it is modelled for DDP and ZeRO-2.
bool overlaps_ep(std::int64_t ep, bool a2a_overlap) { return a2a_overlap && ep > 1; }

constexpr GrammarPart kFsdpParts[] = {{"hsdp", "plan.fsdp.shard_degree", true, ""},
                                      {"noreshard", "plan.fsdp.reshard_after_forward", false, "false"},
                                      {"fsdp1", "plan.fsdp.implementation", false, "\"fsdp1\""},
                                      {"ep", "plan.expert_parallel.degree", true, ""}};

double unit_numel(const StageView& view, std::int64_t unit) {
  return view.unit_numel.count(unit) ? view.unit_numel.at(unit) : 0.0;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> FsdpFamilyDesign::word_fields() const {
  return {{"plan.design", "\"fsdp\""},
          {"plan.expert_parallel.degree", "1"},
          {"plan.pipeline.degree", "1"},
          {"plan.fsdp.shard_degree", "0"}};
}

std::span<const GrammarPart> FsdpFamilyDesign::parts() const { return kFsdpParts; }

std::vector<LedgerItem> FsdpFamilyDesign::forward_items(const ParallelPlan& plan, const StageView& view) const {
  if (accumulates_unsharded(plan)) return pipelined_items(plan, view, nullptr);
  return microbatch_forward_items(plan, view);
}

std::vector<LedgerItem> FsdpFamilyDesign::backward_items(const ParallelPlan& plan, const StageView& view,
                                                         std::int64_t layer) const {
  if (accumulates_unsharded(plan)) return pipelined_items(plan, view, &layer);
  return microbatch_backward_items(plan, view, layer);
}

std::vector<LedgerItem> FsdpFamilyDesign::microbatch_forward_items(const ParallelPlan& plan,
                                                                   const StageView& view) const {
  return {gathered_units(plan, view)};
}

std::vector<LedgerItem> FsdpFamilyDesign::microbatch_backward_items(const ParallelPlan& plan, const StageView& view,
                                                                    std::int64_t layer) const {
  return {gathered_units(plan, view), unsharded_gradients(plan, view, layer)};
}

std::vector<LedgerItem> FsdpFamilyDesign::pipelined_items(const ParallelPlan& plan, const StageView& view,
                                                          const std::int64_t* layer) {
  double numel = 0;
  for (const auto& [unit, n] : view.unit_numel) numel += n;
  const double e = bytes_of(plan.precision.compute), acc = bytes_of(plan.precision.reduce);
  std::vector<LedgerItem> out = {
      {"gathered units (kept across microbatches under the pipeline)", MemClass::fsdp_materialized, numel * e,
       "every unit of the stage x compute dtype"},
      {"unsharded gradient accumulators", MemClass::fsdp_grad_unsharded, numel * acc,
       "every unit of the stage x reduce dtype, reduce-scattered after the chunk's last backward"}};
  if (layer != nullptr)
    out.push_back({"unit gradients before accumulation", MemClass::weight_grad_transient, unit_numel(view, *layer) * e,
                   "the layer's unit x compute dtype"});
  return out;
}

UnitHold FsdpFamilyDesign::unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const {
  return gathered_unit_hold(plan, view, unit);
}

// torchtitan's FSDP2 stack: EP dispatch by NCCL all_to_all_single, torch's AdamW (its CUDA
// default is the foreach implementation: fused=None, foreach=None), every weight quantized on use.
DesignDefaults FsdpFamilyDesign::defaults() const {
  return {EpTransport::nccl_all_to_all, OptimizerKernels::foreach, false};
}

std::string FsdpFamilyDesign::planner_refusal(const PlannerDegrees& d) const {
  if (d.shard_degree > 0 && !ep_divides_shard_group(d.ep, d.shard_degree, d.tp))
    return "EP degree does not divide the ranks of one FSDP shard group (shard degree x TP)";
  if (overlaps_ep(d.ep, d.ep_a2a_overlap))
    return "the EP all-to-all overlap is modelled for the DDP and ZeRO-2 designs";
  if (d.etp > 1) return "expert TP is modelled for the DDP and ZeRO-2 designs";
  return "";
}

void FsdpFamilyDesign::check(const ParallelPlan& p, const Architecture& a, const PlanFail& fail) const {
  if (p.precision.weight_caches) {
    // FSDP2 frees each gathered weight after use, so no resident weight is there to keep
    // quantized copies of.
    fail("precision.weight_caches",
         "true needs the ddp design's resident compute weights; FSDP2 quantizes each gathered weight on use "
         "(allowed: false)");
  }
  if (!p.overlap_grad_reduce || p.overlap_param_gather || p.grad_accumulation_fusion) {
    // FSDP2 gathers each unit before its compute and reduce-scatters it right after (plan.fsdp);
    // Megatron-LM refuses gradient accumulation fusion with torch FSDP2 (arguments.py).
    fail(p.overlap_param_gather       ? "ddp.overlap_param_gather"
         : p.grad_accumulation_fusion ? "ddp.grad_accumulation_fusion"
                                      : "ddp.overlap_grad_reduce",
         "is a DDP option; design \"fsdp\" gathers and reduce-scatters unit by unit (plan.fsdp.prefetch_depth)");
  }
  if (overlaps_ep(p.ep, p.ep_a2a_overlap)) {
    fail("expert_parallel.a2a_overlap",
         "true is modelled for the DDP and ZeRO-2 designs (Megatron-Core's combined 1F1B); design \"fsdp\" gathers "
         "and frees each unit around its own pass (allowed: false)");
  }
  if (const SyncFreeRerun rerun = sync_free_rerun(p, a); rerun.reruns()) {
    // The rerun zeroes the gradients and runs every pass again (PagedStashRunner); the FSDP
    // strategies' gathers and reductions are placed once per step.
    fail("expert_parallel.rank_capacity_factor",
         "reruns this step (" + rerun.why(p) +
             "); a rerun step is modelled for the DDP and ZeRO-2 designs (allowed: a budget and stash that hold the "
             "routed rows, or design \"ddp\" or \"zero2\")");
  }
  if (p.etp > 1) {
    fail("expert_parallel.tensor_degree",
         "expert TP with design \"fsdp\" is not modeled (allowed: 1; expert TP runs with designs \"ddp\" and "
         "\"zero2\")");
  }
  if (p.fsdp_shard != 0 && p.dp() % p.fsdp_shard != 0) {
    fail("fsdp.shard_degree",
         "shard degree " + std::to_string(p.fsdp_shard) + " does not divide the DP degree " + std::to_string(p.dp()));
  } else if (!ep_divides_shard_group(p.ep, p.shard_group(), p.tp)) {
    fail("expert_parallel.degree", "EP degree " + std::to_string(p.ep) + " does not divide the " +
                                       std::to_string(p.shard_group() * p.tp) +
                                       " ranks of one FSDP shard group (shard degree x TP)");
  }
}

std::vector<LedgerItem> FsdpFamilyDesign::persistent_state(const std::vector<LocalTensor>& tensors,
                                                           const ParallelPlan& plan,
                                                           OptimizerShardReport& report) const {
  return fsdp_sharded_state(tensors, plan, report);
}

UpdateBuffers FsdpFamilyDesign::update_buffers(const ParallelPlan& plan,
                                               const std::vector<LocalTensor>& tensors) const {
  return whole_update(tensors, dbl(plan.shard_group()));
}

std::string FsdpFamilyDesign::hsdp_part(const ParallelPlan& p) {
  return p.fsdp_shard != 0 && p.fsdp_shard < p.dp() ? "+hsdp" + std::to_string(p.fsdp_shard) : "";
}

LedgerItem FsdpFamilyDesign::gathered_units(const ParallelPlan& plan, const StageView& view) {
  const double e = bytes_of(plan.precision.compute);
  return {"gathered units (current + prefetch)", MemClass::fsdp_materialized,
          dbl(1 + plan.fsdp_prefetch) * max_value(view.unit_numel) * e,
          "(1 + prefetch) x largest unit x compute dtype"};
}

LedgerItem FsdpFamilyDesign::unsharded_gradients(const ParallelPlan& plan, const StageView& view, std::int64_t layer) {
  const double e = bytes_of(plan.precision.compute);
  return {"unsharded unit gradients", MemClass::fsdp_grad_unsharded,
          unit_numel(view, layer) * (e + bytes_of(plan.precision.reduce)),
          "unit grads in compute dtype + reduce-scatter input in reduce dtype"};
}

UnitHold FsdpFamilyDesign::gathered_unit_hold(const ParallelPlan& plan, const StageView& view,
                                              std::int64_t unit) const {
  const double n = unit_numel(view, unit), e = bytes_of(plan.precision.compute);
  const double reduce = n * bytes_of(plan.precision.reduce);
  return {n * e, n * e, reduce, accumulates_unsharded(plan) ? reduce : 0.0};
}

}  // namespace moesim
