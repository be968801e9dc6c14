// What the bucketed designs share (ddp_distributed_optimizer.cpp, zero2.cpp): gradient buckets
// built as Olmo-core's DDP and DeepSpeed build them, and the sharded end of a step.
#pragma once

#include <map>
#include <vector>

#include "sim/schedules/param_sync.hpp"

namespace moesim {

struct Bucket {
  double numel = 0;
  Communicator communicator = Communicator::dp;  // its replica group: DP, or EP-DP for routed experts
  std::int64_t ready_layer = 0;                  // complete once this layer's gradients exist
};

// Gradient buckets in reverse parameter order, a new bucket on a change of replica group or when
// the cap (in reduce-dtype bytes) would be exceeded; a larger tensor is its own (Olmo-core
// MultiGroupDistributedDataParallel; DeepSpeed's reduce bucket likewise fills in backward order).
std::vector<Bucket> gradient_buckets(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan);

// Elements per replica group's communicator over all the buckets.
std::map<Communicator, double> elements_by_group(const std::vector<Bucket>& buckets);

// The collective a bucket's gradients are reduced with (plan.ddp.grad_sync), and its bytes.
CollectiveKind bucket_reduction(const ParallelPlan& plan);
double bucket_reduce_bytes(const ParallelPlan& plan, const Bucket& bucket);

// The sizes of the sharded optimizer step, which its tasks and its bound both read: the rank's
// shard of every replica group's elements, the update's traffic over it, and per group with more
// than one member the rebuild's pack, all-gather and copy-out bytes (no copy-out in place).
struct ShardedStep {
  struct Rebuild {
    Communicator group = Communicator::dp;
    double pack_bytes = 0, gather_bytes = 0, copy_out_bytes = 0;
  };
  double shard = 0;
  double update_bytes = 0;
  MemoryKernel update_kind = MemoryKernel::elementwise;
  std::vector<Rebuild> rebuilds;
};
ShardedStep sharded_step(const ParallelPlan& plan, const std::map<Communicator, double>& by_group);

// A strategy that reduces gradients in buckets: the rank it serves, its buckets and the
// reductions its optimizer step waits for.
class BucketedSync : public ParamSync {
 public:
  explicit BucketedSync(const RankContext& rank) : rank_(rank), buckets_(gradient_buckets(rank.tensors, rank.plan)) {}

 protected:
  // A wait on the compute stream for every reduction so far (finish_grad_sync), which the next
  // ones then replace in `reductions_`. Returns the wait.
  TaskId wait_for_reductions();

  RankContext rank_;
  std::vector<Bucket> buckets_;
  std::vector<TaskId> reductions_;
};

// The sharded optimizer step once every reduction in `reductions` is done: gradient clipping over
// this rank's shard, the update of the shard, then the rebuild of the compute weights (cast the
// updated shard into a pack buffer, one coalesced all-gather per replica group, copy each tensor
// out; in place, the all-gather fills the parameter buffer). Without `gather` the rebuild stops
// after the cast: the all-gathers run in the next forward (overlap_param_gather). Returns the last
// task.
TaskId sharded_update_and_rebuild(const RankContext& rank, const std::map<Communicator, double>& by_group,
                                  const std::vector<TaskId>& reductions, bool gather = true);

// sharded_update_and_rebuild's chain at solo times, from its gradient-norm all-reduce on.
double sharded_update_and_rebuild_s(const SyncStage& s, const std::map<Communicator, double>& by_group,
                                    bool gather = true);

// Every bucket's reduction of `kind` at its solo time.
double bucket_reductions_s(const SyncStage& s, const std::vector<Bucket>& buckets, CollectiveKind kind);

}  // namespace moesim
