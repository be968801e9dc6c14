// What the FSDP strategies share (fsdp2_full_reshard.cpp, fsdp1_full_shard.cpp): a unit's
// elements by the group they are sharded over, which units are gathered again for backward, the
// sharded update at the step's end, and the bound on their one serial communication stream.
#pragma once

#include <array>
#include <vector>

#include "sim/schedules/param_sync.hpp"

namespace moesim {

// A unit's elements by the group they are sharded over: all of them over the shard group, or
// with EP the routed experts over the experts' shard group and the rest over the shard group.
struct ShardPart {
  double numel = 0;
  std::int64_t group = 1;
  Communicator communicator = Communicator::fsdp_shard;
};
struct ShardParts {
  std::array<ShardPart, 2> part{};
  std::size_t count = 0;
  const ShardPart* begin() const { return part.data(); }
  const ShardPart* end() const { return part.data() + count; }
};
ShardParts shard_parts(const ParallelPlan& p, double numel, double expert_numel);

// Whether `unit` is gathered again for its backward: with reshard_after_forward (`regather`)
// every block is; the embedding (-1) and the LM head (`last_unit`) only where they live in a root
// unit that is resharded after forward (`root_regathered`). Olmo-core keeps the LM head gathered
// through backward and skips the embedding's backward gather (its backward needs no weight);
// with tied embeddings both live in the root unit, which is. FSDP1 never reshards its root after
// forward. Without reshard_after_forward every unit is still gathered from its forward.
bool gathered_for_backward(std::int64_t unit, std::int64_t last_unit, bool root_regathered, bool regather);

// The rank's gradient norm over its shards and the sharded optimizer update after it, once every
// reduction in `reductions` is done.
void sharded_update(const RankContext& rank, const std::vector<TaskId>& reductions);

// Every gather and reduce-scatter of the stage's units, each microbatch, on the one comm_dp
// stream (the shard group's communicator serialises them); `units` the stage's (stage_units).
// `root_regathered` as gathered_for_backward's, for the stage's architecture.
double fsdp_serial_stream_s(const SyncStage& s, const StageUnits& units, bool regather_for_backward,
                            bool root_regathered);

}  // namespace moesim
