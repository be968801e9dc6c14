// ZeRO-2 (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
// Parameter Models", stage P_os+g; DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py with
// partition_grads): BF16 compute weights replicated on every rank; gradients reduce-scattered in
// buckets every microbatch into each rank's FP32 partition; FP32 main weights and optimizer states
// sharded the same way (DeepSpeed flattens each parameter group and partitions it evenly: the
// concat_then_shard layout); after the update an all-gather rebuilds the compute weights. Per
// parameter 2 + 16/D bytes under AdamW, against 6 + 12/D for the distributed optimizer's full FP32
// gradient buffer. Its tasks: sim/schedules/zero2.cpp.
#include <algorithm>

#include "models/memory/persistent_state.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/designs/design.hpp"

namespace moesim {

namespace {

constexpr GrammarPart kZero2Parts[] = {{"ep", "plan.expert_parallel.degree", true, ""},
                                       {"etp", "plan.expert_parallel.tensor_degree", true, ""}};

class Zero2 final : public DesignEntry {
 public:
  Zero2()
      : DesignEntry("zero2",
                    "ZeRO-2 (DeepSpeed stage 2): replicated BF16 weights; gradients reduce-scattered in buckets every "
                    "microbatch into FP32 partitions; main weights and optimizer states sharded; compute weights "
                    "all-gathered after the update (+epN for expert parallelism)",
                    "zero2") {}

  bool selected_by(const ParallelPlan&) const override { return true; }
  std::vector<std::pair<std::string, std::string>> word_fields() const override {
    return {{"plan.design", "\"zero2\""}, {"plan.expert_parallel.degree", "1"}, {"plan.pipeline.degree", "1"}};
  }
  std::span<const GrammarPart> parts() const override { return kZero2Parts; }
  NameParts name_parts(const ParallelPlan&) const override { return {}; }
  // DeepSpeed: EP all-to-alls through torch.distributed (NCCL), its FusedAdam on the partition,
  // flat partitions of each parameter group; no quantized weight caches.
  DesignDefaults defaults() const override {
    return {EpTransport::nccl_all_to_all, OptimizerKernels::fused, false, ShardLayout::concat_then_shard};
  }
  // Megatron-Core's DDP overlap switches are not DeepSpeed's: ZeRO-2 reduce-scatters each bucket
  // as it fills in every microbatch and gathers the weights at the step's end.
  void check(const ParallelPlan& plan, const Architecture&, const PlanFail& fail) const override {
    if (!plan.overlap_grad_reduce) {
      fail("ddp.overlap_grad_reduce",
           "false is a Megatron-Core DDP option; ZeRO-2 reduce-scatters each bucket as it fills in every microbatch "
           "(allowed: true)");
    }
    if (plan.grad_accumulation_fusion) {
      fail("ddp.grad_accumulation_fusion",
           "true is a Megatron-Core DDP option; ZeRO-2 copies each gradient into its reduction bucket (allowed: "
           "false)");
    }
    if (plan.overlap_param_gather) {
      fail("ddp.overlap_param_gather",
           "true is a Megatron-Core DDP option; ZeRO-2 all-gathers the weights after the update (allowed: false)");
    }
  }
  std::vector<PlannerFamily> families() const override {
    return {{"zero2", false, false, false, true, {{&plan_key::design, "zero2"}}}};
  }

  std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                           OptimizerShardReport& report) const override {
    std::vector<LedgerItem> items, optimizer;
    add_compute_weights(tensors, plan, items);
    const double partition = add_optimizer_state(tensors, plan, true, optimizer, report);
    add_gradient_partition(partition, plan, items);
    items.insert(items.end(), optimizer.begin(), optimizer.end());
    return items;
  }
  UnitHold unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const override {
    UnitHold hold;
    const double local = view.largest_local.count(unit) ? view.largest_local.at(unit) : 0.0;
    hold.weight_grad = local * bytes_of(plan.precision.compute);
    hold.reduce_input = plan.bucket_cap_bytes;
    return hold;
  }
  std::vector<LedgerItem> forward_items(const ParallelPlan&, const StageView&) const override { return {}; }
  std::vector<LedgerItem> backward_items(const ParallelPlan& plan, const StageView& view,
                                         std::int64_t layer) const override {
    const UnitHold hold = unit_hold(plan, view, layer);
    return {{"weight gradient (one tensor)", MemClass::weight_grad_transient, hold.weight_grad,
             "largest local tensor of the layer in compute dtype, copied into the bucket, freed"},
            {"gradient bucket", MemClass::weight_grad_transient, hold.reduce_input,
             "one bucket (plan.ddp.bucket_cap_MiB) being reduce-scattered"}};
  }
  UpdateBuffers update_buffers(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors) const override {
    return sharded_update(plan, tensors);
  }
  bool rebuilds_weights(const ParallelPlan&) const override { return true; }
  bool bucketed_gradients() const override { return false; }
  bool gradients_made_each_step() const override { return false; }
  bool syncs_every_microbatch(const ParallelPlan&) const override { return true; }
  std::string_view param_sync() const override { return "zero2"; }
};

}  // namespace

std::unique_ptr<DesignEntry> make_zero2_design() { return std::make_unique<Zero2>(); }

}  // namespace moesim
