// The bytes of FSDP2's kernels (sim/schedules/fsdp2_full_reshard.cpp), which its tasks and its
// step bound both price, and its bound under a pipeline schedule (fsdp2_pipelined_bounds.cpp).
#pragma once

#include "sim/schedules/fsdp_units.hpp"

namespace moesim {

// A shard part's gather (cast the FP32 shard to BF16, copy it into the flat buffer, all-gather the
// part), a unit's copy-out of the gathered buffer (read and write BF16 once) and its
// reduce-scatter copy-in (read the compute dtype, write the reduce dtype).
struct GatherBytes {
  double cast = 0, staged = 0, gathered = 0;
};
inline GatherBytes gather_bytes(const ParallelPlan& plan, const ShardPart& part) {
  const double weight = bytes_of(plan.precision.compute), main = bytes_of(plan.optimizer.main_weight_dtype);
  const double shard = part.numel / dbl(part.group);
  return {shard * (main + weight), 2 * shard * weight, part.numel * weight};
}
inline double copy_out_bytes(const ParallelPlan& plan, double numel) {
  return 2 * (numel * bytes_of(plan.precision.compute));
}
inline double copy_in_bytes(const ParallelPlan& plan, double numel) {
  return numel * (bytes_of(plan.precision.compute) + bytes_of(plan.precision.reduce));
}
// Under a pipeline: a microbatch's gradient added into the unsharded accumulator in the reduce
// dtype (read both, write the sum), or the first one cast into it (nothing where the dtypes are
// equal: autograd's gradient is the accumulator); the chunk's copy-in reads the accumulator.
inline double accumulate_bytes(const ParallelPlan& plan, double numel, bool first) {
  const double e = bytes_of(plan.precision.compute), acc = bytes_of(plan.precision.reduce);
  if (first) return plan.precision.compute == plan.precision.reduce ? 0.0 : numel * (e + acc);
  return numel * (e + 2 * acc);
}
inline double accumulated_copy_in_bytes(const ParallelPlan& plan, double numel) {
  return 2 * numel * bytes_of(plan.precision.reduce);
}

// FSDP2's bound on a stage under a pipeline schedule (torch.distributed.pipelining), with
// reshard_after_forward (`regather`) or without.
SyncBounds fsdp2_pipelined_bounds(const SyncStage& s, const StageUnits& units, bool regather);

}  // namespace moesim
