#include "sim/schedules/fsdp_units.hpp"

#include "models/costs/optimizer_traffic.hpp"

namespace moesim {

ShardParts shard_parts(const ParallelPlan& p, double numel, double expert_numel) {
  const double experts = p.expert_shard_group() != p.shard_group() ? expert_numel : 0.0;
  ShardParts out;
  if (numel - experts > 0 || experts == 0) out.part[out.count++] = {numel - experts, p.shard_group()};
  if (experts > 0) out.part[out.count++] = {experts, p.expert_shard_group(), Communicator::expert_shard};
  return out;
}

bool gathered_for_backward(std::int64_t unit, std::int64_t last_unit, bool root_regathered, bool regather) {
  const bool edge = unit == -1 || unit == last_unit;
  return regather && (!edge || root_regathered);
}

void sharded_update(const RankContext& rank, const std::vector<TaskId>& reductions) {
  double local = 0, experts = 0;
  for (double n : rank.local_params.values()) local += n;
  if (rank.plan.expert_shard_group() != rank.plan.shard_group())
    for (double n : rank.unit_expert_numel.values()) experts += n;
  const double shard = (local - experts) / dbl(rank.plan.shard_group()) +
                       (experts > 0 ? experts / dbl(rank.plan.expert_shard_group()) : 0.0);
  const TaskId clipped = clip_gradients(rank, shard, reductions);
  const UpdateTraffic update = update_traffic(rank.plan.optimizer, rank.plan.precision.grad_accum);
  rank.emit.memory_kernel({rank.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1},
                          shard * update.bytes_per_element, update.kind, "sharded update", clipped);
}

double fsdp_serial_stream_s(const SyncStage& s, const StageUnits& units, bool regather_for_backward,
                            bool root_regathered) {
  const PrecisionSpec& precision = s.plan.precision;
  const std::int64_t last = s.arch.num_layers;
  double per_microbatch = 0;
  for (std::int64_t unit = -1; unit <= last; ++unit) {
    if (!(units.numel[unit] > 0)) continue;
    const double passes = gathered_for_backward(unit, last, root_regathered, regather_for_backward) ? 2.0 : 1.0;
    for (const ShardPart& part : shard_parts(s.plan, units.numel[unit], units.expert_numel[unit])) {
      const CommunicatorShape shape = communicator_shape(s.plan, part.communicator);
      const auto solo = [&](CollectiveKind kind, double bytes) {
        return s.costs.collective(collective_request(kind, bytes, shape)).time_s;
      };
      per_microbatch += passes * solo(CollectiveKind::all_gather, part.numel * bytes_of(precision.compute)) +
                        solo(CollectiveKind::reduce_scatter, part.numel * bytes_of(precision.reduce));
    }
  }
  return dbl(s.microbatches) * per_microbatch;
}

}  // namespace moesim
