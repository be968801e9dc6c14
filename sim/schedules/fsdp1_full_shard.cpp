// FSDP1 FULL_SHARD (torch.distributed.fsdp.FullyShardedDataParallel, use_orig_params) placed where
// PyTorch puts its work (torch/distributed/fsdp/_runtime_utils.py _unshard, _post_backward_hook,
// _reduce_grad, _accumulate_sharded_grad; _limiter_utils.py _FreeEventQueue), with Composer's
// wrapping and defaults (composer/utils/parallelism.py FSDPConfig: limit_all_gathers,
// backward_prefetch BACKWARD_POST, forward_prefetch off; one FSDP unit per block under a root):
// - gather: on the pre-unshard stream the FP32 shard is cast to the BF16 mixed-precision shard
//   (FlatParamHandle.pre_unshard), then all-gathered straight into the padded flat parameter on
//   the unshard stream; the parameters are views of it, so no copy-in copy and no copy-out: the
//   compute stream only waits for the gather (wait_stream);
// - the gathers and the reduce-scatters share the shard group's communicator, so they run one at
//   a time in the order the host issues them;
// - forward: the rate limiter lets the host issue unit k's gather once unit k - 2 has been freed,
//   after its forward (two gathered units in flight); the pass's first gathers wait for the
//   compute stream's work so far (_root_pre_forward's _wait_for_computation_stream);
// - backward: with BACKWARD_PRE or BACKWARD_POST the next unit's gather is issued during this
//   unit's backward, ahead of this unit's reduce-scatter; both give the communicator the same
//   order (this unit's predecessor's reduce-scatter, then the next unit's gather, then this
//   unit's reduce-scatter), so they are placed alike; without backward prefetch the next unit's
//   gather is issued by its own pre-backward hook, after this unit's reduce-scatter;
// - the root unit (embedding and LM head) is not resharded after forward, so neither is gathered
//   for backward;
// - the reduction runs on the post-backward stream once the unit's gradient is computed: the flat
//   gradient cast to the reduce dtype where it differs, divided by the pre-divide factor, the
//   reduce-scatter, the shard divided by the post-divide factor, cast to the FP32 parameter
//   dtype, and (after the first microbatch) added into the saved sharded gradient; the next
//   unit's reduction waits for this one (one stream);
// - HSDP (HYBRID_SHARD): the shard's all-reduce across replicas after every reduce-scatter.
#include "sim/schedules/fsdp_units.hpp"

namespace moesim {

namespace {

// FSDP1's gradient division around the reduce-scatter (_init_utils.py
// _get_gradient_predivide_factor): doubling f from 1 while f divides the world and world / f > f
// (8 ranks: 4), it divides by f before the reduction and by world / f after it; a factor of 1
// runs no kernel.
double predivide_factor(std::int64_t world) {
  std::int64_t factor = 1;
  while (world % factor == 0 && world / factor > factor) factor *= 2;
  return dbl(factor);
}

class Fsdp1 final : public ParamSync {
 public:
  explicit Fsdp1(const RankContext& rank) : rank_(rank) {}

  TaskId before_unit(const UnitVisit& visit, TaskId ready) override {
    const std::int64_t unit = visit.units[visit.index];
    if (!visit.backward) {
      if (visit.index == 0) pass_start_ = rank_.emit.last_on(rank_.rank, StreamKind::compute);
      // The rate limiter: unit i's gather waits for the free of unit i - 2, recorded after its
      // forward, i.e. the end of that forward (where unit i - 1 started).
      const TaskId limit = visit.index >= 2 ? previous_start_ : pass_start_;
      previous_start_ = ready;  // the end of unit i - 1's forward
      return joined(visit, unit, ready, gather(visit, unit, limit));
    }
    const bool prefetch = rank_.plan.fsdp_backward_prefetch != BackwardPrefetch::none;
    // The first unit's gather (or every unit's, without prefetch) is issued by its own hook.
    if ((visit.index == 0 || !prefetch) && regathered(unit)) pending_gather_ = gather(visit, unit, kNoTask);
    const TaskId out = regathered(unit) ? joined(visit, unit, ready, pending_gather_) : ready;
    pending_gather_ = kNoTask;
    if (prefetch && visit.index + 1 < visit.units.size()) {
      const std::int64_t next = visit.units[visit.index + 1];
      if (regathered(next)) pending_gather_ = gather(visit, next, kNoTask);
    }
    return out;
  }

  void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) override {
    const PrecisionSpec& precision = rank_.plan.precision;
    const double n = rank_.local_params[unit], reduce = bytes_of(precision.reduce);
    const double shard = n / dbl(rank_.plan.shard_group());
    const TaskPlace post{rank_.rank, StreamKind::comm_rs, PhaseTag::fsdp_reduce, microbatch, unit};
    TaskId at = grads_ready;
    if (precision.compute != precision.reduce)
      at = rank_.emit.memory_kernel(post, n * (bytes_of(precision.compute) + reduce), MemoryKernel::elementwise,
                                    "flat gradient cast to the reduce dtype", at);
    const double pre = predivide_factor(rank_.plan.shard_group()), after = dbl(rank_.plan.shard_group()) / pre;
    if (pre > 1)
      at = rank_.emit.memory_kernel(post, 2 * n * reduce, MemoryKernel::elementwise, "gradient pre-divide", at);
    at = rank_.emit.collective(
        {rank_.rank, StreamKind::comm_dp, PhaseTag::fsdp_reduce, microbatch, unit},
        {Communicator::fsdp_shard, CollectivePurpose::fsdp_reduce_scatter, CollectiveKind::reduce_scatter, n * reduce},
        at);
    if (rank_.plan.shard_group() < rank_.plan.dp()) {
      at = rank_.emit.collective({rank_.rank, StreamKind::comm_replica, PhaseTag::grad_sync, microbatch, unit},
                                 {Communicator::hsdp_replica, CollectivePurpose::hsdp_replica_all_reduce,
                                  CollectiveKind::all_reduce, shard * reduce},
                                 at);
    }
    if (after > 1)
      at = rank_.emit.memory_kernel(post, 2 * shard * reduce, MemoryKernel::elementwise, "gradient post-divide", at);
    const double main = bytes_of(rank_.plan.optimizer.main_weight_dtype);
    if (precision.reduce != rank_.plan.optimizer.main_weight_dtype)
      at = rank_.emit.memory_kernel(post, shard * (reduce + main), MemoryKernel::elementwise,
                                    "sharded gradient cast to the parameter dtype", at);
    if (microbatch > 0)  // _saved_grad_shard += the new shard: read both, write the sum
      at = rank_.emit.memory_kernel(post, 3 * shard * main, MemoryKernel::elementwise, "sharded gradient accumulate",
                                    at);
    reductions_.push_back(at);
  }

  void end_of_step() override { sharded_update(rank_, reductions_); }

 private:
  bool regathered(std::int64_t unit) const {
    return gathered_for_backward(unit, rank_.last_unit, false, rank_.plan.fsdp_reshard_after_forward);
  }

  // The mixed-precision shard cast on the pre-unshard stream, then the all-gather into the flat
  // parameter.
  TaskId gather(const UnitVisit& visit, std::int64_t unit, TaskId after) {
    const PrecisionSpec& precision = rank_.plan.precision;
    const double weight = bytes_of(precision.compute), main = bytes_of(rank_.plan.optimizer.main_weight_dtype);
    const double n = rank_.local_params[unit], shard = n / dbl(rank_.plan.shard_group());
    TaskId cast = after;
    if (precision.compute != rank_.plan.optimizer.main_weight_dtype)
      cast = rank_.emit.memory_kernel({rank_.rank, StreamKind::copy_in, PhaseTag::fsdp_gather, visit.microbatch, unit},
                                      shard * (main + weight), MemoryKernel::elementwise, "mixed-precision shard cast",
                                      after);
    return rank_.emit.collective(
        {rank_.rank, StreamKind::comm_dp, PhaseTag::fsdp_gather, visit.microbatch, unit},
        {Communicator::fsdp_shard,
         visit.backward ? CollectivePurpose::fsdp_gather_backward : CollectivePurpose::fsdp_gather_forward,
         CollectiveKind::all_gather, n * weight},
        cast);
  }

  // The compute stream's wait for the gather (cudaStreamWaitEvent: no kernel, no time).
  TaskId joined(const UnitVisit& visit, std::int64_t unit, TaskId ready, TaskId gathered) {
    return rank_.emit.kernel({rank_.rank, StreamKind::compute, PhaseTag::fsdp_gather, visit.microbatch, unit},
                             TaskKind::host, 0.0, "wait for the all-gather", ready, gathered);
  }

  RankContext rank_;
  TaskId pass_start_ = kNoTask;      // forward: the compute stream's last task before the pass
  TaskId previous_start_ = kNoTask;  // forward: where the previous unit's forward started
  TaskId pending_gather_ = kNoTask;  // backward: the gather issued for the next unit
  std::vector<TaskId> reductions_;   // what the optimizer waits for
};

class Fsdp1Model final : public ParamSyncModel {
 public:
  constexpr Fsdp1Model()
      : ParamSyncModel("fsdp1_full_shard",
                       "FSDP1 FULL_SHARD as FullyShardedDataParallel places it: flat parameters gathered without "
                       "copy-in or copy-out under the all-gather rate limiter, backward prefetch, flat gradients "
                       "pre-divided, reduce-scattered and post-divided on the post-backward stream; sharded update") {}
  std::unique_ptr<ParamSync> make(const RankContext& rank) const override { return std::make_unique<Fsdp1>(rank); }
  SyncBounds stage_bounds(const SyncStage& s) const override {
    SyncBounds out;
    out.serial_s = fsdp_serial_stream_s(s, stage_units(s), s.plan.fsdp_reshard_after_forward, false);
    return out;
  }
};

}  // namespace

std::unique_ptr<ParamSyncModel> make_fsdp1_full_shard() { return std::make_unique<Fsdp1Model>(); }

}  // namespace moesim
