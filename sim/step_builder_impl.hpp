// Internal state of the step builder, shared by its translation units.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/plan/rank_layout.hpp"
#include "sim/layer_work.hpp"
#include "sim/step_builder.hpp"

namespace moesim::detail {

// Which communicator a collective runs on; members are the ranks with equal group keys.
enum class Domain { dp, ep_mp, ep_dp, fsdp_shard, hsdp_replica, p2p };

struct Bucket {
  double numel = 0;
  Domain domain = Domain::dp;
  std::int64_t ready_layer = 0;  // the bucket is complete once this layer's gradients exist
};

struct RankState {
  std::vector<LayerWork> layers;        // by layer index
  EdgeWork edge;
  std::map<std::int64_t, double> params_by_layer;  // local params (-1 embedding, L head)
  std::map<std::int64_t, double> unit_numel;       // full numel per FSDP unit
  std::vector<Bucket> buckets;
  std::vector<TaskId> sync_tasks;       // gradient reductions the optimizer waits for
  std::map<std::int64_t, TaskId> done_fwd;  // last compute task of a layer's forward, this op
  std::map<std::int64_t, TaskId> done_bwd;
};

// Olmo-core DDP gradient buckets: reverse parameter order, a new bucket on a change of replica
// group or when the cap (in reduce-dtype bytes) would be exceeded; a larger tensor is its own.
std::vector<Bucket> ddp_buckets(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan);

using GroupKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int>;

class StepBuilder {
 public:
  StepBuilder(const Architecture& a, const Inventory& inv, const ParallelPlan& p, const CostBook& c, const SimOptions& o);
  BuiltStep build();

 private:
  friend struct SyncEmitter;
  void choose_ranks();
  void prepare(std::uint32_t r);
  void emit_forward(std::uint32_t r, const PipeOp& op, OpSpan& span);
  void emit_backward(std::uint32_t r, const PipeOp& op, OpSpan& span);
  void emit_layer_forward(std::uint32_t r, std::int64_t layer, int mb, PhaseTag phase, int tag, TaskId& cursor);
  void emit_layer_backward(std::uint32_t r, std::int64_t layer, int mb, TaskId& cursor);
  void after_layer_backward(std::uint32_t r, std::int64_t layer, int mb, TaskId grads_ready);
  void emit_optimizer(std::uint32_t r);

  TaskId compute(std::uint32_t r, StreamKind s, PhaseTag ph, double work, int mb, std::int64_t layer, const char* what,
                 TaskId dep = kNoTask, TaskId dep2 = kNoTask);
  TaskId collective(std::uint32_t r, Domain d, CollectiveKindTag kind, PhaseTag ph, StreamKind s, double bytes, int mb,
                    std::int64_t layer, int tag, TaskId dep = kNoTask);
  TaskId p2p(std::uint32_t r, std::int64_t from_stage, std::int64_t to_stage, double bytes, int mb, int chunk, bool forward,
             TaskId dep);
  // FSDP2: gather unit `units[i]` (bounded by the prefetch depth) and copy it out; returns the copy-out task.
  TaskId fsdp_materialize(std::uint32_t r, const std::vector<std::int64_t>& units, std::size_t i,
                          const std::map<std::int64_t, TaskId>& done, int mb, int tag, TaskId cursor);
  std::vector<std::int64_t> chunk_layers(std::int64_t stage, std::int64_t chunk) const;
  bool first_virtual(std::int64_t stage, std::int64_t chunk) const { return stage == 0 && chunk == 0; }
  bool last_virtual(std::int64_t stage, std::int64_t chunk) const { return stage == p_.pp - 1 && chunk == virt_ - 1; }
  std::int64_t group_size(Domain d) const;
  std::int64_t per_node(Domain d) const;

  const Architecture& a_;
  const Inventory& inv_;
  const ParallelPlan& p_;
  const CostBook& c_;
  SimOptions o_;
  std::int64_t virt_ = 1;
  std::vector<LayerPlace> place_;  // by layer index
  std::map<std::pair<int, int>, std::uint32_t> coll_labels_;
  std::int64_t m_ = 1;
  double tokens_ = 0;
  // Routed rows kept and dropped over every prepared rank; each stage has the same number of
  // simulated ranks, so their ratio is the step's dropped fraction.
  double routed_rows_ = 0, dropped_rows_ = 0;
  BuiltStep out_;
  std::vector<RankState> st_;
  std::map<GroupKey, std::uint32_t> groups_;
  std::map<std::tuple<int, double, std::int64_t, std::int64_t>, CommCost> comm_cache_;
};

}  // namespace moesim::detail
