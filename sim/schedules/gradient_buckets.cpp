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

TaskId sharded_update_and_rebuild(const RankContext& rank, const std::map<Communicator, double>& by_group,
                                  const std::vector<TaskId>& reductions, bool gather) {
  const ParallelPlan& plan = rank.plan;
  const OptimizerSpec& optimizer = plan.optimizer;
  const UpdateTraffic update = update_traffic(optimizer, plan.precision.grad_accum);
  const double weight = bytes_of(plan.precision.compute);
  const TaskPlace update_at{rank.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1};
  double shard = 0;
  for (const auto& [group, n] : by_group) shard += n / dbl(communicator_shape(plan, group).ranks);
  const TaskId clipped = clip_gradients(rank, shard, reductions);
  const TaskId updated =
      rank.emit.memory_kernel(update_at, shard * update.bytes_per_element, update.kind, "sharded update", clipped);
  TaskId previous = updated;
  for (const auto& [group, n] : by_group) {
    const double members = dbl(communicator_shape(plan, group).ranks);
    if (members <= 1) continue;
    const TaskPlace at{rank.rank, StreamKind::compute, PhaseTag::weight_rebuild, -1, -1};
    const TaskId pack = rank.emit.memory_kernel(at, n / members * (bytes_of(optimizer.main_weight_dtype) + weight),
                                                MemoryKernel::elementwise, "pack shard", previous);
    if (!gather) {
      previous = pack;
      continue;
    }
    const TaskId gathered =
        rank.emit.collective({rank.rank, StreamKind::comm_dp, PhaseTag::weight_rebuild, -1, -1},
                             {group, CollectivePurpose::weight_rebuild, CollectiveKind::all_gather, n * weight}, pack);
    previous = optimizer.rebuild == WeightRebuild::in_place
                   ? gathered
                   : rank.emit.memory_kernel(at, 2 * n * weight, MemoryKernel::copy, "copy out", gathered);
  }
  return previous;
}

double sharded_update_and_rebuild_s(const SyncStage& s, const std::map<Communicator, double>& by_group, bool gather) {
  const ParallelPlan& plan = s.plan;
  const OptimizerSpec& optimizer = plan.optimizer;
  const UpdateTraffic update = update_traffic(optimizer, plan.precision.grad_accum);
  const double weight = bytes_of(plan.precision.compute);
  double shard = 0;
  for (const auto& [group, n] : by_group) shard += n / dbl(communicator_shape(plan, group).ranks);
  double t = clip_after_reductions_s(s, shard) + s.costs.memory(shard * update.bytes_per_element, update.kind);
  for (const auto& [group, n] : by_group) {
    const double members = dbl(communicator_shape(plan, group).ranks);
    if (members <= 1) continue;
    t += s.costs.memory(n / members * (bytes_of(optimizer.main_weight_dtype) + weight), MemoryKernel::elementwise);
    if (!gather) continue;
    t += solo_collective_s(s, CollectiveKind::all_gather, n * weight, group);
    if (optimizer.rebuild != WeightRebuild::in_place) t += s.costs.memory(2 * n * weight, MemoryKernel::copy);
  }
  return t;
}

double bucket_reductions_s(const SyncStage& s, const std::vector<Bucket>& buckets, CollectiveKind kind) {
  // Most buckets are full to the cap: each size and group is priced once.
  std::map<std::pair<Communicator, double>, int> count;
  for (const Bucket& bucket : buckets) ++count[{bucket.communicator, bucket.numel}];
  double t = 0;
  for (const auto& [bucket, n] : count)
    t += n * solo_collective_s(s, kind, bucket.second * bytes_of(s.plan.precision.reduce), bucket.first);
  return t;
}

}  // namespace moesim
