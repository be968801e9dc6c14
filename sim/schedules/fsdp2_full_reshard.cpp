// FSDP2 with full reshard (the Olmo-core report's baseline, seed Section 4), placed where PyTorch's
// fully_shard puts its work (torch/distributed/fsdp/_fully_shard/: _fsdp_collectives.py
// foreach_all_gather, foreach_all_gather_copy_out, foreach_reduce; _fsdp_param_group.py
// FSDPParamGroup.wait_for_unshard, post_backward) with Olmo-core's wrapping
// (olmo_core/nn/transformer/model.py Transformer.apply_fsdp):
// - one unit per block, BF16 parameters, FP32 reduction, sharded FP32 master weights;
// - all-gather copy-in on its own stream: the FP32 shard cast to BF16, then copied into this
//   rank's slice of the flat buffer; the all-gather; the copy-out on the compute stream;
// - the all-gather and the reduce-scatter share one NCCL communicator (the shard process group),
//   so they run one at a time, in the order the host issues them;
// - forward: the gather of unit k waits only for the copy-out of unit k - 1 - prefetch (implicit
//   prefetch); backward: each unit prefetches the next one's gather right after its copy-out;
// - the LM head stays gathered from forward through backward (reshard_after_forward=False) and
//   the embedding is not gathered for backward (set_unshard_in_backward(False));
// - the reduce-scatter's copy-in (chunk_cat, widening BF16 to FP32) runs on the compute stream,
//   which first waits for the previous unit's reduce-scatter; ReduceOp.AVG divides in NCCL;
//   microbatches after the first add their output into the sharded gradient on the
//   reduce-scatter stream;
// - HSDP: the replica all-reduce on its own stream and communicator, on the final microbatch;
// - with EP, a block's routed experts are sharded over their own group (torchtitan's per-parameter
//   meshes, torchtitan/distributed/fsdp.py apply_fsdp_to_decoder: the experts on the efsdp mesh,
//   the rest on the dense one): each gather and reduce-scatter is one collective per group, one
//   after the other on the same streams;
// - with reshard_after_forward=False (fsdp2_shard_grad_op) no unit is gathered for backward: each
//   stays gathered from its forward.
// Under a pipeline schedule the stage's module runs through torch.distributed.pipelining
// (torchtitan's PP), which changes when FSDP2 moves anything (stage.py:
// backward_maybe_with_nosync, _post_backward; schedules.py: _add_reduce_grad):
// - every backward runs with set_requires_gradient_sync(False) and set_reshard_after_backward(False):
//   no reduce-scatter per microbatch, and a unit gathered for its backward stays gathered;
// - its gradient accumulates unsharded: the first microbatch's is cast to the reduce dtype
//   (FSDPParam.to_accumulated_grad_if_needed), later ones are added into it
//   (accumulate_unsharded_grad_if_needed), on the compute stream;
// - after a model chunk's last backward, its REDUCE_GRAD action calls every unit's post_backward:
//   the copy-in of the accumulated gradient and its reduce-scatter, unit after unit, then
//   _root_post_backward_final_callback makes the compute stream wait for the last one;
// - a unit is gathered only where it is not gathered already (FSDPParamGroup.unshard): once per
//   step without reshard_after_forward (torchtitan's default under PP), before a forward that
//   follows its resharding after the previous forward otherwise.
#include <algorithm>

#include "sim/schedules/fsdp2_bytes.hpp"

namespace moesim {

namespace {

class Fsdp2 final : public ParamSync {
 public:
  Fsdp2(const RankContext& rank, bool regather_for_backward)
      : rank_(rank),
        copy_outs_(rank.last_unit, kNoTask),
        regather_for_backward_(regather_for_backward),
        pipelined_(rank.plan.pp > 1),
        gathered_(rank.last_unit, 0),
        backwards_(rank.last_unit, 0) {
    for (std::int64_t unit = -1; unit <= rank.last_unit; ++unit) {
      const std::int32_t c = rank.unit_chunk[unit];
      if (c < 0) continue;
      if (static_cast<std::size_t>(c) >= chunk_units_.size()) chunk_units_.resize(static_cast<std::size_t>(c) + 1);
      chunk_units_[static_cast<std::size_t>(c)].push_back(unit);
    }
  }

  TaskId before_unit(const UnitVisit& visit, TaskId ready) override {
    const std::int64_t unit = visit.units[visit.index];
    if (!visit.backward) {
      if (visit.index == 0) {
        copy_outs_.fill(kNoTask);
        pass_start_ = rank_.emit.last_on(rank_.rank, StreamKind::compute);
      }
      const bool gather_now = needs_gather(unit, false);
      if (pipelined_) gathered_[unit] = resharded_after_forward(unit) ? 0 : 1;
      if (!gather_now) return ready;
      // Implicit prefetch: the copy-in and gather of unit i wait for the copy-out of unit
      // i - 1 - depth (all_gather_state), nothing else; the pass's first ones wait for the
      // compute stream's work so far (FSDPState._root_pre_forward: the all-gather streams wait
      // on the current stream), so gathers never run ahead into the next microbatch.
      const auto back = static_cast<std::ptrdiff_t>(visit.index) - 1 - rank_.plan.fsdp_prefetch;
      TaskId limit = back >= 0          ? copy_out_of(visit.units[static_cast<std::size_t>(back)])
                     : visit.index == 0 ? pass_start_
                                        : kNoTask;
      if (pipelined_ && limit == kNoTask) limit = pass_start_;  // the unit it would follow was gathered already
      return copy_out(visit, unit, gather(visit, unit, limit), ready);
    }
    // Backward: the first unit's gather is issued here, every later one by its predecessor.
    if (visit.index == 0 && needs_gather(unit, true)) pending_gather_ = gather(visit, unit, kNoTask);
    const bool gathered = needs_gather(unit, true);
    const TaskId out = gathered ? copy_out(visit, unit, pending_gather_, ready) : ready;
    if (gathered && pipelined_) gathered_[unit] = 1;  // kept: no reshard after backward
    pending_gather_ = kNoTask;
    // Prefetch the next unit's gather once this copy-out is done (_backward_prefetch).
    if (visit.index + 1 < visit.units.size()) {
      const std::int64_t next = visit.units[visit.index + 1];
      if (needs_gather(next, true)) pending_gather_ = gather(visit, next, out == ready ? kNoTask : out);
    }
    return out;
  }

  void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) override {
    if (pipelined_) return accumulate(unit, microbatch, grads_ready);
    const PrecisionSpec& precision = rank_.plan.precision;
    // chunk_cat on the compute stream, after the previous unit's reduce-scatter (post_backward).
    const TaskId staged =
        rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::fsdp_reduce, microbatch, unit},
                                 copy_in_bytes(rank_.plan, numel(unit)), MemoryKernel::elementwise,
                                 "reduce-scatter copy-in", grads_ready, last_reduce_scatter_);
    TaskId reduced = reduce_scatter(unit, microbatch, staged);
    if (microbatch > 0) {
      // grad += output in FP32: read both, write the sum.
      reduced = rank_.emit.memory_kernel({rank_.rank, StreamKind::comm_rs, PhaseTag::fsdp_reduce, microbatch, unit},
                                         3 * shard(unit) * bytes_of(precision.grad_accum), MemoryKernel::elementwise,
                                         "sharded gradient accumulate", reduced);
    }
    if (microbatch == rank_.microbatches - 1) reduced = replica_all_reduce(unit, microbatch, reduced);
    reductions_.push_back(reduced);
  }

  void end_of_step() override { sharded_update(rank_, reductions_); }

 private:
  double numel(std::int64_t unit) const { return rank_.local_params[unit]; }

  ShardParts parts(std::int64_t unit) const {
    return shard_parts(rank_.plan, numel(unit), rank_.unit_expert_numel[unit]);
  }
  double shard(std::int64_t unit) const {
    double out = 0;
    for (const ShardPart& part : parts(unit)) out += part.numel / dbl(part.group);
    return out;
  }

  bool gathered_for_backward(std::int64_t unit) const {
    return moesim::gathered_for_backward(unit, rank_.last_unit, rank_.tied_embeddings, regather_for_backward_);
  }

  // Whether the unit's pass gathers it. Without a pipeline: every forward, and every backward
  // where it was resharded after its forward. Under one: wherever it is not gathered now (the
  // embedding's backward needs no weight: set_unshard_in_backward(False)).
  bool needs_gather(std::int64_t unit, bool backward) const {
    if (!pipelined_) return !backward || gathered_for_backward(unit);
    if (gathered_[unit] != 0) return false;
    return !backward || unit != -1 || rank_.tied_embeddings;
  }
  // Whether reshard_after_forward frees the unit after its forward: every block with it, the
  // root's embedding and LM head as the root is (the LM head is kept through backward).
  bool resharded_after_forward(std::int64_t unit) const {
    return regather_for_backward_ && (unit != rank_.last_unit || rank_.tied_embeddings);
  }

  TaskId copy_out_of(std::int64_t unit) const { return copy_outs_[unit]; }

  // Copy-in (cast the FP32 shard to BF16, copy it into the flat buffer) and the all-gather.
  // One per shard group of the unit.
  TaskId gather(const UnitVisit& visit, std::int64_t unit, TaskId after) {
    const TaskPlace copy_in{rank_.rank, StreamKind::copy_in, PhaseTag::fsdp_gather, visit.microbatch, unit};
    TaskId gathered = kNoTask;
    for (const ShardPart& part : parts(unit)) {
      const GatherBytes bytes = gather_bytes(rank_.plan, part);
      const TaskId cast =
          rank_.emit.memory_kernel(copy_in, bytes.cast, MemoryKernel::elementwise, "all-gather copy-in cast", after);
      const TaskId staged =
          rank_.emit.memory_kernel(copy_in, bytes.staged, MemoryKernel::copy, "all-gather copy-in", cast);
      gathered = rank_.emit.collective(
          {rank_.rank, StreamKind::comm_dp, PhaseTag::fsdp_gather, visit.microbatch, unit},
          {part.communicator,
           visit.backward ? CollectivePurpose::fsdp_gather_backward : CollectivePurpose::fsdp_gather_forward,
           CollectiveKind::all_gather, bytes.gathered},
          staged);
    }
    return gathered;
  }

  // The compute stream copies the gathered flat buffer out into the unit's parameters (read and
  // write BF16 once), after the gather and the previous compute.
  TaskId copy_out(const UnitVisit& visit, std::int64_t unit, TaskId gathered, TaskId ready) {
    const TaskId out = rank_.emit.memory_kernel(
        {rank_.rank, StreamKind::compute, PhaseTag::fsdp_gather, visit.microbatch, unit},
        copy_out_bytes(rank_.plan, numel(unit)), MemoryKernel::copy, "all-gather copy-out", ready, gathered);
    copy_outs_[unit] = out;
    return out;
  }

  // The unit's reduce-scatters after `staged`, one per shard group.
  TaskId reduce_scatter(std::int64_t unit, std::int32_t microbatch, TaskId staged) {
    TaskId reduced = staged;
    for (const ShardPart& part : parts(unit)) {
      reduced =
          rank_.emit.collective({rank_.rank, StreamKind::comm_dp, PhaseTag::fsdp_reduce, microbatch, unit},
                                {part.communicator, CollectivePurpose::fsdp_reduce_scatter,
                                 CollectiveKind::reduce_scatter, part.numel * bytes_of(rank_.plan.precision.reduce)},
                                reduced);
    }
    last_reduce_scatter_ = reduced;
    return reduced;
  }
  // HSDP: the shard's all-reduce over the replicas after `reduced`, once per step.
  TaskId replica_all_reduce(std::int64_t unit, std::int32_t microbatch, TaskId reduced) {
    if (rank_.plan.shard_group() >= rank_.plan.dp()) return reduced;
    return rank_.emit.collective({rank_.rank, StreamKind::comm_replica, PhaseTag::grad_sync, microbatch, unit},
                                 {Communicator::hsdp_replica, CollectivePurpose::hsdp_replica_all_reduce,
                                  CollectiveKind::all_reduce, shard(unit) * bytes_of(rank_.plan.precision.reduce)},
                                 reduced);
  }

  // Under a pipeline: the microbatch's gradient into the unit's unsharded accumulator; after the
  // chunk's last backward, its REDUCE_GRAD.
  void accumulate(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready) {
    const bool first = backwards_[unit]++ == 0;
    const double bytes = accumulate_bytes(rank_.plan, numel(unit), first);
    if (bytes > 0) {
      rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::accumulate, microbatch, unit}, bytes,
                               MemoryKernel::elementwise,
                               first ? "unsharded gradient cast" : "unsharded gradient accumulate", grads_ready);
    }
    // The chunk's last backward is over once each of its units has had every microbatch's.
    const std::int32_t c = rank_.unit_chunk[unit];
    if (c < 0 || backwards_[unit] < rank_.microbatches) return;
    const std::vector<std::int64_t>& units = chunk_units_[static_cast<std::size_t>(c)];
    if (std::all_of(units.begin(), units.end(), [&](std::int64_t u) { return backwards_[u] == rank_.microbatches; }))
      reduce_chunk(units, microbatch);
  }

  // REDUCE_GRAD: each unit's post_backward in turn (its copy-in waits for the previous unit's
  // reduce-scatter), then the compute stream waits for the last one; the unit is resharded.
  void reduce_chunk(const std::vector<std::int64_t>& units, std::int32_t microbatch) {
    for (const std::int64_t unit : units) {
      gathered_[unit] = 0;
      if (!(numel(unit) > 0)) continue;
      const TaskId staged =
          rank_.emit.memory_kernel({rank_.rank, StreamKind::compute, PhaseTag::fsdp_reduce, microbatch, unit},
                                   accumulated_copy_in_bytes(rank_.plan, numel(unit)), MemoryKernel::elementwise,
                                   "reduce-scatter copy-in", kNoTask, last_reduce_scatter_);
      reductions_.push_back(replica_all_reduce(unit, microbatch, reduce_scatter(unit, microbatch, staged)));
    }
    rank_.emit.kernel({rank_.rank, StreamKind::compute, PhaseTag::fsdp_reduce, microbatch, -1}, TaskKind::host, 0.0,
                      "wait for the gradient reduce-scatters", last_reduce_scatter_);
  }

  RankContext rank_;
  UnitTable<TaskId> copy_outs_;                         // this pass's copy-out of each unit
  TaskId pending_gather_ = kNoTask;                     // backward: the prefetched gather of the next unit
  TaskId last_reduce_scatter_ = kNoTask;                // the compute stream waits for it before a copy-in
  TaskId pass_start_ = kNoTask;                         // forward: the compute stream's last task before the pass
  std::vector<TaskId> reductions_;                      // what the optimizer waits for
  bool regather_for_backward_ = true;                   // reshard_after_forward: gather each unit again for backward
  bool pipelined_ = false;                              // under a pipeline schedule (torch.distributed.pipelining)
  UnitTable<char> gathered_;                            // pipelined: the unit is gathered now
  UnitTable<std::int64_t> backwards_;                   // pipelined: gradient passes of the unit so far
  std::vector<std::vector<std::int64_t>> chunk_units_;  // the units of each model chunk of the stage
};

// A registered FSDP2 strategy: the same placement, gathering for backward or not.
class Fsdp2Model final : public ParamSyncModel {
 public:
  constexpr Fsdp2Model(std::string_view name, std::string_view description, bool regather_for_backward)
      : ParamSyncModel(name, description), regather_(regather_for_backward) {}
  std::unique_ptr<ParamSync> make(const RankContext& rank) const override {
    return std::make_unique<Fsdp2>(rank, regather_);
  }
  // Its serial stream: every gather and reduce-scatter. Its compute-stream kernels: each unit's
  // copy-out in forward (and in backward where it is gathered again), and its reduce-scatter
  // copy-in after its backward.
  SyncBounds stage_bounds(const SyncStage& s) const override {
    const StageUnits units = stage_units(s);
    if (s.plan.pp > 1) return fsdp2_pipelined_bounds(s, units, regather_);
    SyncBounds out;
    out.serial_s = fsdp_serial_stream_s(s, units, regather_, s.arch.tie_embeddings);
    out.compute = unit_shares(s, units, [&](std::int64_t unit) {
      UnitShare x;
      x.forward = s.costs.memory(copy_out_bytes(s.plan, units.numel[unit]), MemoryKernel::copy);
      if (gathered_for_backward(unit, s.arch.num_layers, s.arch.tie_embeddings, regather_)) x.backward = x.forward;
      x.gradients = s.costs.memory(copy_in_bytes(s.plan, units.numel[unit]), MemoryKernel::elementwise);
      return x;
    });
    out.compute.forward_wait = first_gathers_s(s, units);
    return out;
  }

 private:
  // Per chunk: the first unit of its forward pass gathered (cast, copy-in and all-gather of each
  // shard part, one after another): before_unit waits for the compute stream's work so far.
  static std::vector<double> first_gathers_s(const SyncStage& s, const StageUnits& units) {
    const std::vector<LayerPlace> places = layer_places(s.plan, s.arch);  // embedding, layers, head
    std::vector<double> out(static_cast<std::size_t>(s.plan.model_chunks()), 0.0);
    std::vector<bool> seen(out.size(), false);
    for (std::int64_t unit = -1; unit <= s.arch.num_layers; ++unit) {
      const LayerPlace& at = places[static_cast<std::size_t>(unit + 1)];
      const auto c = static_cast<std::size_t>(at.chunk);
      if (at.stage != s.stage || seen[c]) continue;
      seen[c] = true;  // the pass's first unit, gathered or not
      if (!(units.numel[unit] > 0)) continue;
      for (const ShardPart& part : shard_parts(s.plan, units.numel[unit], units.expert_numel[unit])) {
        const GatherBytes bytes = gather_bytes(s.plan, part);
        out[c] += s.costs.memory(bytes.cast, MemoryKernel::elementwise) +
                  s.costs.memory(bytes.staged, MemoryKernel::copy) +
                  solo_collective_s(s, CollectiveKind::all_gather, bytes.gathered, part.communicator);
      }
    }
    return out;
  }

  bool regather_;
};

}  // namespace

std::unique_ptr<ParamSyncModel> make_fsdp2_full_reshard() {
  return std::make_unique<Fsdp2Model>(
      "fsdp2_full_reshard",
      "FSDP2 full reshard as fully_shard places it: gathers and reduce-scatters on one communicator, copy-in "
      "streams, implicit prefetch, LM head kept and embedding not re-gathered for backward; sharded update",
      true);
}

// fully_shard(reshard_after_forward=False): FSDPParamGroup.post_forward leaves the unit
// unsharded, so its backward issues no all-gather (pre_backward finds it unsharded); it is
// resharded after its backward (reshard_after_backward), as with full reshard.
std::unique_ptr<ParamSyncModel> make_fsdp2_shard_grad_op() {
  return std::make_unique<Fsdp2Model>(
      "fsdp2_shard_grad_op",
      "FSDP2 with reshard_after_forward=False (FSDP1 SHARD_GRAD_OP): each unit gathered once per microbatch for its "
      "forward and kept through its backward; the rest as fsdp2_full_reshard",
      false);
}

}  // namespace moesim
