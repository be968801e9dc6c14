// Olmo-core DDP (seed Section 4; olmo_core/nn/parallel/distributed.py
// MultiGroupDistributedDataParallel and olmo_core/optim/moe_optimizer.py OLMoDDPOptimizer, branch
// olmo-ddp): static BF16 compute-weight replicas; the FP32 buckets zeroed once per step; every
// microbatch's backward adds each gradient into its FP32 bucket view (no_sync accumulation); on
// the final microbatch each bucket, once full, is divided in place and all-reduced, in bucket
// order; then the gradient norm and clipping, the distributed optimizer's update of each rank's
// FP32 shard and a coalesced all-gather per replica group rebuilding the BF16 compute weights.
// Without the distributed optimizer every rank updates everything. Megatron-Core's switches
// (distributed_data_parallel_config.py): without overlap_grad_reduce the buckets are reduced once
// the backward has finished (finish_grad_sync); with overlap_param_gather the rebuild's all-gathers
// run bucket by bucket beside the next step's first forward (_make_forward_pre_hook).
#include <algorithm>

#include "models/costs/low_precision.hpp"
#include "sim/schedules/gradient_buckets.hpp"

namespace moesim {

namespace {

// The bytes of the kernels its tasks and its bound both price: zeroing a bucket (write FP32
// once), adding a unit's BF16 gradient into its FP32 view (read BF16, read + write FP32), and
// without the distributed optimizer the cast of every updated main weight to the compute dtype.
double zero_bytes(const ParallelPlan& plan, double numel) { return numel * bytes_of(plan.precision.grad_accum); }
double accumulate_bytes(const ParallelPlan& plan, double numel) {
  return numel * (bytes_of(plan.precision.compute) + 2 * bytes_of(plan.precision.grad_accum));
}
double cast_bytes(const ParallelPlan& plan, double numel) {
  return numel * (bytes_of(plan.optimizer.main_weight_dtype) + bytes_of(plan.precision.compute));
}

class DdpDistributedOptimizer final : public BucketedSync {
 public:
  using BucketedSync::BucketedSync;

  // Its compute-stream kernels: the zeroing of every bucket, and each unit's FP32 accumulate after
  // its backward. Its final sync: the last microbatch's bucket reductions (after the passes
  // without overlap_grad_reduce), the loss all-reduce behind them on the stream, then the
  // optimizer step's chain.
  static SyncBounds stage_bounds(const SyncStage& s) {
    const ParallelPlan& plan = s.plan;
    const std::vector<Bucket> buckets = gradient_buckets(s.tensors, plan);
    const StageUnits units = stage_units(s);
    SyncBounds out;
    out.compute = unit_shares(s, units, [&](std::int64_t unit) {
      UnitShare x;
      if (!plan.grad_accumulation_fusion)
        x.gradients = s.costs.memory(accumulate_bytes(plan, units.numel[unit]), MemoryKernel::elementwise);
      return x;
    });
    for (const Bucket& bucket : buckets)
      out.compute.at_start += s.costs.memory(zero_bytes(plan, bucket.numel), MemoryKernel::elementwise);
    out.final = {bucket_reductions_s(s, buckets, bucket_reduction(plan)) + loss_all_reduce_s(s),
                 !plan.overlap_grad_reduce};
    if (plan.distributed_optimizer) {
      out.final.s += sharded_update_and_rebuild_s(s, elements_by_group(buckets), !plan.overlap_param_gather);
      return out;
    }
    double local = 0;
    for (const Bucket& bucket : buckets) local += bucket.numel;
    const OptimizerSpec& optimizer = plan.optimizer;
    const UpdateTraffic update = update_traffic(optimizer, plan.precision.grad_accum);
    out.final.s += clip_after_reductions_s(s, local) + s.costs.memory(local * update.bytes_per_element, update.kind) +
                   s.costs.memory(cast_bytes(plan, local), MemoryKernel::elementwise);
    return out;
  }

  void start_of_step() override {
    zero_buckets();
    gathers_.assign(buckets_.size(), kNoTask);
    next_gather_ = static_cast<std::ptrdiff_t>(buckets_.size()) - 1;
  }

  // The first try's reductions end its forward-backward (without overlap_grad_reduce they run
  // now, as at the end of a step); then zero_grad_buffer. The parameter all-gathers the first
  // try's forward waited for are not repeated: the parameters have not changed.
  TaskId between_tries() override {
    if (!rank_.plan.overlap_grad_reduce) {
      for (std::size_t b = 0; b < buckets_.size(); ++b) reduce_bucket(b, kNoTask);
    }
    const TaskId waited = wait_for_reductions();
    const TaskId zeroed = zero_buckets();
    return zeroed == kNoTask ? waited : zeroed;
  }

  // overlap_param_gather: in the first microbatch's forward, each bucket's all-gather (of the
  // weights the previous step's update cast into the parameter buffer's shard) is waited for
  // before the first unit that reads it, and that wait dispatches the next bucket's all-gather
  // (_ParamAndGradBucketGroup.finish_param_sync: one bucket ahead, within its model chunk); a
  // bucket nobody dispatched is dispatched at its own pre-hook, exposed. A dispatch starts after
  // the compute issued before it (ProcessGroupNCCL syncs its stream with the current one).
  // Buckets are in backward order, so the forward meets them from the last to the first.
  TaskId before_unit(const UnitVisit& visit, TaskId ready) override {
    const ParallelPlan& plan = rank_.plan;
    if (!plan.distributed_optimizer || !plan.overlap_param_gather || visit.backward || visit.microbatch != 0) {
      return ready;
    }
    const std::int64_t unit = visit.units[visit.index];
    TaskId waited = kNoTask;
    for (; next_gather_ >= 0 && buckets_[idx(next_gather_)].ready_layer <= unit; --next_gather_) {
      const TaskId gather = gather_bucket(next_gather_, ready);
      if (gather != kNoTask) waited = gather;  // one stream: the last one ends last
    }
    if (waited == kNoTask) return ready;
    if (next_gather_ >= 0) {
      const std::int64_t layer = buckets_[idx(next_gather_)].ready_layer;
      const auto rest = visit.units.begin() + static_cast<std::ptrdiff_t>(visit.index) + 1;
      if (std::find(rest, visit.units.end(), layer) != visit.units.end()) {
        for (std::ptrdiff_t b = next_gather_; b >= 0 && buckets_[idx(b)].ready_layer == layer; --b) {
          gather_bucket(b, ready);
        }
      }
    }
    // The compute stream waits for the gather (cudaStreamWaitEvent): no work of its own.
    return rank_.emit.kernel({rank_.rank, StreamKind::compute, PhaseTag::weight_rebuild, visit.microbatch, unit},
                             TaskKind::host, 0.0, "wait for parameter all-gather", waited, ready);
  }

  void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) override {
    // The post-accumulate hook adds each BF16 gradient into its FP32 bucket view (read BF16,
    // read + write FP32) in every microbatch (seed 4.4.1).
    // With grad_accumulation_fusion the weight-gradient GEMMs have already added into the bucket.
    const ParallelPlan& plan = rank_.plan;
    TaskId last =
        plan.grad_accumulation_fusion
            ? grads_ready
            : rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::accumulate, microbatch, unit},
                                       accumulate_bytes(plan, rank_.local_params[unit]), MemoryKernel::elementwise,
                                       "FP32 grad accumulate", grads_ready);
    if (microbatch != rank_.microbatches - 1 || !plan.overlap_grad_reduce) return;
    // Final microbatch: buckets launch in order as they fill during backward.
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      if (buckets_[b].ready_layer == unit) last = reduce_bucket(b, last);
    }
  }

  void end_of_step() override {
    const ParallelPlan& plan = rank_.plan;
    // Without overlap every bucket is reduced, in order, once the whole backward has run.
    if (!plan.overlap_grad_reduce) {
      for (std::size_t b = 0; b < buckets_.size(); ++b) reduce_bucket(b, kNoTask);
    }
    const UpdateTraffic update = update_traffic(plan.optimizer, plan.precision.grad_accum);
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
      const TaskId cast = rank_.emit.memory_kernel(update_at, cast_bytes(plan, local), MemoryKernel::elementwise,
                                                   "cast to the compute dtype");
      refresh_weight_caches(cast);
      return;
    }
    // OLMoDDPOptimizer.step: clip the FP32 main gradients (this rank's shard of each tensor),
    // foreach AdamW on the shard, then the weight rebuild (seed 4.3.1).
    refresh_weight_caches(sharded_update_and_rebuild(rank_, by_group, reductions_, !plan.overlap_param_gather));
  }

 private:
  static std::size_t idx(std::ptrdiff_t b) { return static_cast<std::size_t>(b); }

  // zero_grad(set_to_none=False): one FP32 fill of each bucket's flat storage
  // (MultiGroupDistributedDataParallel.zero_grad). Returns the last (kNoTask: no bucket).
  TaskId zero_buckets() {
    TaskId last = kNoTask;
    for (const auto& bucket : buckets_) {
      last =
          rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::accumulate, 0, -1},
                                   zero_bytes(rank_.plan, bucket.numel), MemoryKernel::elementwise, "zero FP32 bucket");
    }
    return last;
  }

  // Bucket b of the last microbatch: divided by its group size in place on the compute stream,
  // then summed (_launch_bucket_all_reduce: div_, then all_reduce(SUM); reduce_scatter_tensor
  // into the distributed optimizer's shards). Returns the divide.
  TaskId reduce_bucket(std::size_t b, TaskId after) {
    const ParallelPlan& plan = rank_.plan;
    const Bucket& bucket = buckets_[b];
    const auto microbatch = static_cast<std::int32_t>(rank_.microbatches - 1);
    const TaskId divided = rank_.emit.memory_kernel(
        {rank_.rank, StreamKind::compute, PhaseTag::grad_sync, microbatch, -1},
        2 * bucket.numel * bytes_of(plan.precision.grad_accum), MemoryKernel::elementwise, "bucket divide", after);
    reductions_.push_back(
        rank_.emit.collective({rank_.rank, StreamKind::comm_dp, PhaseTag::grad_sync, microbatch, -1},
                              {bucket.communicator, CollectivePurpose::gradient_bucket, bucket_reduction(plan),
                               bucket_reduce_bytes(plan, bucket), static_cast<std::int32_t>(b)},
                              divided));
    return divided;
  }

  // Bucket b's all-gather into the parameter buffer (overlap_param_gather), once; kNoTask for a
  // bucket whose replica group is this rank alone.
  TaskId gather_bucket(std::ptrdiff_t b, TaskId after) {
    const Bucket& bucket = buckets_[idx(b)];
    if (communicator_shape(rank_.plan, bucket.communicator).ranks <= 1) return kNoTask;
    if (gathers_[idx(b)] == kNoTask) {
      gathers_[idx(b)] =
          rank_.emit.collective({rank_.rank, StreamKind::comm_dp, PhaseTag::weight_rebuild, -1, bucket.ready_layer},
                                {bucket.communicator, CollectivePurpose::weight_rebuild, CollectiveKind::all_gather,
                                 bucket.numel * bytes_of(rank_.plan.precision.compute), static_cast<std::int32_t>(b)},
                                after);
    }
    return gathers_[idx(b)];
  }

  // Low-precision weight caches are rebuilt from the refreshed BF16 compute weights, both
  // orientations, once the rebuild has landed (seed 4.4.3; models/costs/low_precision.hpp).
  void refresh_weight_caches(TaskId after) {
    const CachedWeights caches = cached_weights(rank_.tensors, rank_.plan);
    if (caches.elements == 0) return;
    rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::weight_rebuild, -1, -1},
                             caches.refresh_traffic, MemoryKernel::elementwise, "refresh weight caches", after);
  }

  std::vector<TaskId> gathers_;      // overlap_param_gather: each bucket's all-gather this step (kNoTask: not yet)
  std::ptrdiff_t next_gather_ = -1;  // the next bucket the forward meets
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
