#include "sim/schedules/gradient_buckets.hpp"

#include <algorithm>

#include "models/costs/optimizer_traffic.hpp"

namespace moesim {

std::vector<Bucket> gradient_buckets(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan) {
  std::vector<Bucket> out;
  const double elem = bytes_of(plan.precision.reduce);
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    const Communicator group = it->tensor->cls == TensorClass::routed_expert ? Communicator::ep_dp : Communicator::dp;
    const bool fits = !out.empty() && out.back().communicator == group &&
                      (out.back().numel + it->local_numel) * elem <= plan.bucket_cap_bytes;
    if (!fits) out.push_back({0.0, group, it->tensor->layer});
    out.back().numel += it->local_numel;
    out.back().ready_layer = std::min(out.back().ready_layer, it->tensor->layer);
  }
  return out;
}

std::map<Communicator, double> elements_by_group(const std::vector<Bucket>& buckets) {
  std::map<Communicator, double> by_group;
  for (const auto& bucket : buckets) by_group[bucket.communicator] += bucket.numel;
  return by_group;
}

CollectiveKind bucket_reduction(const ParallelPlan& plan) {
  return plan.grad_sync == GradSync::all_reduce ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
}

double bucket_reduce_bytes(const ParallelPlan& plan, const Bucket& bucket) {
  return bucket.numel * bytes_of(plan.precision.reduce);
}

ShardedStep sharded_step(const ParallelPlan& plan, const std::map<Communicator, double>& by_group) {
  const OptimizerSpec& optimizer = plan.optimizer;
  const UpdateTraffic update = update_traffic(optimizer, plan.precision.grad_accum);
  const double weight = bytes_of(plan.precision.compute);
  ShardedStep out;
  for (const auto& [group, n] : by_group) out.shard += n / dbl(communicator_shape(plan, group).ranks);
  out.update_bytes = out.shard * update.bytes_per_element;
  out.update_kind = update.kind;
  for (const auto& [group, n] : by_group) {
    const double members = dbl(communicator_shape(plan, group).ranks);
    if (members <= 1) continue;
    out.rebuilds.push_back({group, n / members * (bytes_of(optimizer.main_weight_dtype) + weight), n * weight,
                            optimizer.rebuild == WeightRebuild::in_place ? 0.0 : 2 * n * weight});
  }
  return out;
}

TaskId BucketedSync::wait_for_reductions() {
  const TaskId wait = rank_.emit.kernel({rank_.rank, StreamKind::compute, PhaseTag::grad_sync, -1, -1}, TaskKind::host,
                                        0.0, "wait for gradient reductions");
  for (const TaskId reduced : reductions_) rank_.emit.depend(reduced, wait);
  reductions_.clear();
  return wait;
}

TaskId sharded_update_and_rebuild(const RankContext& rank, const std::map<Communicator, double>& by_group,
                                  const std::vector<TaskId>& reductions, bool gather) {
  const ShardedStep step = sharded_step(rank.plan, by_group);
  const TaskPlace update_at{rank.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1};
  const TaskId clipped = clip_gradients(rank, step.shard, reductions);
  TaskId previous = rank.emit.memory_kernel(update_at, step.update_bytes, step.update_kind, "sharded update", clipped);
  for (const ShardedStep::Rebuild& r : step.rebuilds) {
    const TaskPlace at{rank.rank, StreamKind::compute, PhaseTag::weight_rebuild, -1, -1};
    const TaskId pack = rank.emit.memory_kernel(at, r.pack_bytes, MemoryKernel::elementwise, "pack shard", previous);
    if (!gather) {
      previous = pack;
      continue;
    }
    const TaskId gathered = rank.emit.collective(
        {rank.rank, StreamKind::comm_dp, PhaseTag::weight_rebuild, -1, -1},
        {r.group, CollectivePurpose::weight_rebuild, CollectiveKind::all_gather, r.gather_bytes}, pack);
    previous = r.copy_out_bytes > 0
                   ? rank.emit.memory_kernel(at, r.copy_out_bytes, MemoryKernel::copy, "copy out", gathered)
                   : gathered;
  }
  return previous;
}

double sharded_update_and_rebuild_s(const SyncStage& s, const std::map<Communicator, double>& by_group, bool gather) {
  const ShardedStep step = sharded_step(s.plan, by_group);
  double t = clip_after_reductions_s(s, step.shard) + s.costs.memory(step.update_bytes, step.update_kind);
  for (const ShardedStep::Rebuild& r : step.rebuilds) {
    t += s.costs.memory(r.pack_bytes, MemoryKernel::elementwise);
    if (!gather) continue;
    t += solo_collective_s(s, CollectiveKind::all_gather, r.gather_bytes, r.group);
    if (r.copy_out_bytes > 0) t += s.costs.memory(r.copy_out_bytes, MemoryKernel::copy);
  }
  return t;
}

double bucket_reductions_s(const SyncStage& s, const std::vector<Bucket>& buckets, CollectiveKind kind) {
  // Most buckets are full to the cap: each size and group is priced once.
  std::map<std::pair<Communicator, double>, int> count;
  for (const Bucket& bucket : buckets) ++count[{bucket.communicator, bucket.numel}];
  double t = 0;
  for (const auto& [key, n] : count) {
    const auto& [group, numel] = key;
    t += n * solo_collective_s(s, kind, bucket_reduce_bytes(s.plan, {numel, group}), group);
  }
  return t;
}

}  // namespace moesim
