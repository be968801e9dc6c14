// FSDP2 with full reshard (the Olmo-core report's baseline, seed Section 4): one unit per block
// (embedding and LM head their own), BF16 parameters, FP32 reduction, sharded FP32 master weights.
// Per microbatch each unit is all-gathered for forward, freed, all-gathered again for backward,
// and its gradient reduce-scattered; the next unit's gather is prefetched. HSDP adds the replica
// all-reduce of the shard on the final microbatch.
#include "sim/schedules/param_sync.hpp"

namespace moesim {

namespace {

class Fsdp2FullReshard final : public ParamSync {
 public:
  explicit Fsdp2FullReshard(const RankContext& rank) : rank_(rank) {}

  TaskId before_unit(const UnitVisit& visit, TaskId ready) override {
    // Implicit prefetch: the gather of unit i may run ahead while unit i - 1 - depth's weights
    // are still in use, no further (FSDP2's prefetch). The compute stream then copies the
    // gathered flat buffer out into the unit's parameters (read and write BF16 once).
    const auto back = static_cast<std::ptrdiff_t>(visit.index) - 1 - rank_.plan.fsdp_prefetch;
    const TaskId limit = back >= 0 ? visit.done.at(visit.units[static_cast<std::size_t>(back)]) : kNoTask;
    const std::int64_t unit = visit.units[visit.index];
    const double weight_bytes = numel(unit) * bytes_of(rank_.plan.precision.compute);
    const TaskId gathered = rank_.emit.collective(
        {rank_.rank, StreamKind::comm_dp, PhaseTag::fsdp_gather, visit.microbatch, unit},
        {Communicator::fsdp_shard,
         visit.backward ? CollectivePurpose::fsdp_gather_backward : CollectivePurpose::fsdp_gather_forward,
         CollectiveKind::all_gather, weight_bytes},
        limit);
    return rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::fsdp_gather, visit.microbatch, unit},
                                    2 * weight_bytes, "all-gather copy-out", ready, gathered);
  }

  void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) override {
    // Reduce-scatter of the unit's gradients in the reduce dtype (input = full unit), every
    // microbatch. FSDP2 first copies the unit's BF16 gradients into one reduce-dtype flat buffer
    // (read 2, write 4 bytes per element) on the reduce-scatter stream, a kernel that shares the
    // SMs.
    const PrecisionSpec& precision = rank_.plan.precision;
    const double n = numel(unit);
    const TaskPlace at{rank_.rank, StreamKind::comm_rs, PhaseTag::fsdp_reduce, microbatch, unit};
    const TaskId staged = rank_.emit.memory_kernel(at, n * (bytes_of(precision.compute) + bytes_of(precision.reduce)),
                                                   "reduce-scatter copy-in", grads_ready);
    TaskId reduced = rank_.emit.collective(at,
                                           {Communicator::fsdp_shard, CollectivePurpose::fsdp_reduce_scatter,
                                            CollectiveKind::reduce_scatter, n * bytes_of(precision.reduce)},
                                           staged);
    const bool final_microbatch = microbatch == rank_.microbatches - 1;
    if (final_microbatch && rank_.plan.shard_group() < rank_.plan.dp()) {
      reduced = rank_.emit.collective(
          {rank_.rank, StreamKind::comm_rs, PhaseTag::grad_sync, microbatch, unit},
          {Communicator::hsdp_replica, CollectivePurpose::hsdp_replica_all_reduce, CollectiveKind::all_reduce,
           n / dbl(rank_.plan.shard_group()) * bytes_of(precision.reduce)},
          reduced);
    }
    reductions_.push_back(reduced);
  }

  void end_of_step() override {
    const TaskId norm = grad_norm(rank_, reductions_);
    double local = 0;
    for (const auto& [unit, n] : rank_.local_params) local += n;
    rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1},
                             local / dbl(rank_.plan.shard_group()) * update_bytes_per_element(rank_.plan.optimizer),
                             "sharded update", norm);
  }

 private:
  double numel(std::int64_t unit) const {
    const auto it = rank_.unit_numel.find(unit);
    return it == rank_.unit_numel.end() ? 0.0 : it->second;
  }

  RankContext rank_;
  std::vector<TaskId> reductions_;  // what the optimizer waits for
};

}  // namespace

std::unique_ptr<ParamSyncModel> make_fsdp2_full_reshard() {
  return std::make_unique<StrategyModel<Fsdp2FullReshard>>(
      "fsdp2_full_reshard",
      "FSDP2 full reshard: per microbatch, gather each unit for forward and again for backward, reduce-scatter its "
      "gradients (HSDP: + replica all-reduce); sharded update",
      Design::fsdp);
}

}  // namespace moesim
