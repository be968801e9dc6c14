// Olmo-core DDP (seed Section 4; olmo_core/nn/parallel/distributed.py
// MultiGroupDistributedDataParallel and olmo_core/optim/moe_optimizer.py OLMoDDPOptimizer, branch
// olmo-ddp): static BF16 compute-weight replicas; the FP32 buckets zeroed once per step; every
// microbatch's backward adds each gradient into its FP32 bucket view (no_sync accumulation); on
// the final microbatch each bucket, once full, is divided in place and all-reduced, in bucket
// order; then the gradient norm and clipping, the distributed optimizer's update of each rank's
// FP32 shard and a coalesced all-gather per replica group rebuilding the BF16 compute weights.
// Without the distributed optimizer every rank updates everything.
#include <algorithm>

#include "models/costs/low_precision.hpp"
#include "sim/schedules/gradient_buckets.hpp"

namespace moesim {

namespace {

class DdpDistributedOptimizer final : public BucketedSync {
 public:
  using BucketedSync::BucketedSync;

  void start_of_step() override {
    // zero_grad(set_to_none=False): one FP32 fill of each bucket's flat storage per step
    // (MultiGroupDistributedDataParallel.zero_grad).
    const double cell = bytes_of(rank_.plan.precision.grad_accum);
    for (const auto& bucket : buckets_) {
      rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::accumulate, 0, -1}, bucket.numel * cell,
                               MemoryKernel::elementwise, "zero FP32 bucket");
    }
  }

  void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) override {
    // The post-accumulate hook adds each BF16 gradient into its FP32 bucket view (read BF16,
    // read + write FP32) in every microbatch (seed 4.4.1).
    const ParallelPlan& plan = rank_.plan;
    const double params = rank_.local_params[unit];
    const double cell = bytes_of(plan.precision.grad_accum);
    const double bytes = params * (bytes_of(plan.precision.compute) + 2 * cell);
    TaskId last = rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::accumulate, microbatch, unit},
                                           bytes, MemoryKernel::elementwise, "FP32 grad accumulate", grads_ready);
    if (microbatch != rank_.microbatches - 1) return;
    // Final microbatch: buckets launch in order as they fill during backward. Each is first
    // divided by its group size in place on the compute stream, then summed
    // (_launch_bucket_all_reduce: div_, then all_reduce(SUM)).
    const auto kind =
        plan.grad_sync == GradSync::all_reduce ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& bucket = buckets_[b];
      if (bucket.ready_layer != unit) continue;
      last = rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::grad_sync, microbatch, -1},
                                      2 * bucket.numel * cell, MemoryKernel::elementwise, "bucket divide", last);
      reductions_.push_back(
          rank_.emit.collective({rank_.rank, StreamKind::comm_dp, PhaseTag::grad_sync, microbatch, -1},
                                {bucket.communicator, CollectivePurpose::gradient_bucket, kind,
                                 bucket.numel * bytes_of(plan.precision.reduce), static_cast<std::int32_t>(b)},
                                last));
    }
  }

  void end_of_step() override {
    const ParallelPlan& plan = rank_.plan;
    const OptimizerSpec& optimizer = plan.optimizer;
    const UpdateTraffic update = update_traffic(optimizer, plan.precision.grad_accum);
    const double weight = bytes_of(plan.precision.compute);
    const TaskPlace update_at{rank_.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1};
    // The cross-entropy loss, averaged over the data-parallel ranks once per step.
    loss_all_reduce(rank_);
    const std::map<Communicator, double> by_group = elements_by_group(buckets_);
    if (!plan.distributed_optimizer) {
      double local = 0;
      for (double n : rank_.local_params.values()) local += n;
      // Every rank clips and updates all of its parameters and casts them to the compute dtype.
      const TaskId clipped = clip_gradients(rank_, local, reductions_);
      rank_.emit.memory_kernel(update_at, local * update.bytes_per_element, update.kind, "update", clipped);
      const TaskId cast = rank_.emit.memory_kernel(update_at, local * (bytes_of(optimizer.main_weight_dtype) + weight),
                                                   MemoryKernel::elementwise, "cast to the compute dtype");
      refresh_weight_caches(cast);
      return;
    }
    // OLMoDDPOptimizer.step: clip the FP32 main gradients (this rank's shard of each tensor),
    // foreach AdamW on the shard, then the weight rebuild (seed 4.3.1).
    refresh_weight_caches(sharded_update_and_rebuild(rank_, by_group, reductions_));
  }

  // Low-precision weight caches are rebuilt from the refreshed BF16 compute weights, both
  // orientations, once the rebuild has landed (seed 4.4.3; models/costs/low_precision.hpp).
  void refresh_weight_caches(TaskId after) {
    const CachedWeights caches = cached_weights(rank_.tensors, rank_.plan);
    if (caches.elements == 0) return;
    rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::weight_rebuild, -1, -1},
                             caches.refresh_traffic, MemoryKernel::elementwise, "refresh weight caches", after);
  }
};

}  // namespace

std::unique_ptr<ParamSyncModel> make_ddp_distributed_optimizer() {
  return std::make_unique<StrategyModel<DdpDistributedOptimizer>>(
      "ddp_distributed_optimizer",
      "Olmo-core DDP: FP32 bucket accumulation every microbatch, bucketed reduction on the last, sharded update and "
      "coalesced BF16 weight rebuild per replica group (without the distributed optimizer: every rank updates "
      "everything)");
}

}  // namespace moesim
