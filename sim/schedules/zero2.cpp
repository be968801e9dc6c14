// ZeRO-2 (DeepSpeed stage 2: deepspeed/runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer with
// partition_grads=True): replicated BF16 compute weights; in every microbatch's backward each
// gradient is copied into the reduction bucket as it is produced (reduce_independent_p_g_buckets_
// and_remove_grads: the IPG bucket), a full bucket is reduce-scattered over its replica group
// (DP, or EP-DP for routed experts), and each rank adds its part into its FP32 gradient partition
// (every microbatch after the first); then the gradient norm and clipping over the partition, the
// update of the rank's FP32 shard, and an all-gather per replica group rebuilding the compute
// weights (DeepSpeed's all_gather_dp_groups), as the distributed optimizer does.
#include "sim/schedules/gradient_buckets.hpp"

namespace moesim {

namespace {

// A bucket's copy-in: read the compute dtype, write the reduce dtype (its tasks and bound).
double copy_in_bytes(const ParallelPlan& plan, const Bucket& bucket) {
  return bucket.numel * (bytes_of(plan.precision.compute) + bytes_of(plan.precision.reduce));
}

class Zero2 final : public BucketedSync {
 public:
  using BucketedSync::BucketedSync;

  // Its compute-stream kernels: each bucket's copy-in after the backward of the unit that
  // completes it. Its serial stream: every microbatch's bucket reduce-scatters, the loss
  // all-reduce behind them, then the sharded update and rebuild.
  static SyncBounds stage_bounds(const SyncStage& s) {
    const std::vector<Bucket> buckets = gradient_buckets(s.tensors, s.plan);
    SyncBounds out;
    out.serial_s = dbl(s.microbatches) * bucket_reductions_s(s, buckets, CollectiveKind::reduce_scatter) +
                   loss_all_reduce_s(s) + sharded_update_and_rebuild_s(s, elements_by_group(buckets));
    out.compute = unit_shares(s, stage_units(s), [&](std::int64_t unit) {
      UnitShare x;
      for (const Bucket& bucket : buckets) {
        if (bucket.ready_layer != unit) continue;
        x.gradients += s.costs.memory(copy_in_bytes(s.plan, bucket), MemoryKernel::elementwise);
      }
      return x;
    });
    return out;
  }

  void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) override {
    const PrecisionSpec& precision = rank_.plan.precision;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& bucket = buckets_[b];
      if (bucket.ready_layer != unit) continue;
      // Copy the bucket's gradients in (read the compute dtype, write the reduce dtype), then
      // reduce-scatter them over the bucket's group.
      const TaskId staged = rank_.emit.memory_kernel(
          {rank_.rank, StreamKind::compute, PhaseTag::grad_sync, microbatch, unit}, copy_in_bytes(rank_.plan, bucket),
          MemoryKernel::elementwise, "gradient bucket copy-in", grads_ready);
      TaskId reduced = rank_.emit.collective(
          {rank_.rank, StreamKind::comm_dp, PhaseTag::grad_sync, microbatch, unit},
          {bucket.communicator, CollectivePurpose::gradient_bucket, CollectiveKind::reduce_scatter,
           bucket_reduce_bytes(rank_.plan, bucket), static_cast<std::int32_t>(b)},
          staged);
      if (microbatch > 0) {
        // partition += this microbatch's part in FP32: read both, write the sum.
        const double part = bucket.numel / dbl(communicator_shape(rank_.plan, bucket.communicator).ranks);
        reduced = rank_.emit.memory_kernel({rank_.rank, StreamKind::comm_rs, PhaseTag::grad_sync, microbatch, unit},
                                           3 * part * bytes_of(precision.grad_accum), MemoryKernel::elementwise,
                                           "gradient partition accumulate", reduced);
      }
      reductions_.push_back(reduced);
    }
  }

  // The first try's reduce-scatters end its forward-backward; the second try's first microbatch
  // then writes each partition anew (no accumulate into it), as a zeroed gradient would start.
  TaskId between_tries() override { return wait_for_reductions(); }

  void end_of_step() override {
    loss_all_reduce(rank_);
    sharded_update_and_rebuild(rank_, elements_by_group(buckets_), reductions_);
  }
};

}  // namespace

std::unique_ptr<ParamSyncModel> make_zero2() {
  return std::make_unique<StrategyModel<Zero2>>(
      "zero2",
      "ZeRO-2 as DeepSpeed stage 2 places it: gradients copied into buckets and reduce-scattered every microbatch, "
      "accumulated into FP32 partitions; sharded update and an all-gather of the compute weights per replica group");
}

}  // namespace moesim
