// Adds a step's tasks to its graph: kernels on a rank's streams, collectives matched across the
// simulated ranks by a named key, and point-to-point transfers between pipeline stages. Each
// distinct communication request is priced once by the cost book.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "models/costs/cost_book.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/group_index.hpp"
#include "sim/step_builder.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

// Why a collective runs; with the communicator and the step position it names one call.
enum class CollectivePurpose : std::uint8_t {
  ep_dispatch_forward,
  ep_combine_forward,  // EP all-to-alls around the routed experts
  ep_dispatch_backward,
  ep_combine_backward,
  ep_dispatch_recompute,
  ep_combine_recompute,  // full recompute replays the forward ones
  fsdp_gather_forward,
  fsdp_gather_backward,  // FSDP2 unit materialization
  fsdp_reduce_scatter,
  hsdp_replica_all_reduce,  // FSDP2 gradient reduction (HSDP: + replicas)
  gradient_bucket,          // DDP bucketed reduction
  grad_norm,                // gradient-norm reduction before clipping
  loss,                     // the loss averaged over the ranks
  rerun_check,              // the sync-free MoE path's overflow flags, after its first try (sync_free.hpp)
  weight_rebuild,           // distributed optimizer's coalesced all-gather
  tp_forward,               // tensor-parallel collectives of activations (bucket: the point's index)
  tp_backward,
  tp_recompute,
  cp_forward,  // context-parallel ring passes or all-to-alls (bucket: the step or exchange index)
  cp_backward,
  cp_recompute,
  etp_forward,  // expert TP's gather and scatter of the routed rows (bucket: 0 gather, 1 scatter)
  etp_backward,
  etp_recompute,
};

// One collective call as every member names it: ranks whose keys are equal run it together.
struct CollectiveKey {
  Communicator communicator = Communicator::dp;
  std::int64_t stage = 0;
  std::int64_t instance = 0;  // communicator_instance() of the members
  CollectivePurpose purpose = CollectivePurpose::grad_norm;
  std::int32_t microbatch = -1;  // -1: once per step
  std::int32_t unit = -1;        // the layer or FSDP unit it serves (-1 embedding; none for per-step calls)
  std::int32_t bucket = -1;      // the DDP gradient bucket, -1 otherwise
  bool first_try = false;        // in the first try of a rerun step (StepEmitter::set_first_try)
  auto operator<=>(const CollectiveKey&) const = default;
};

// Groups are matched by hash: one lookup per member instead of a tree walk of field compares.
struct CollectiveKeyHash {
  std::size_t operator()(const CollectiveKey& k) const noexcept {
    return hash_fields({static_cast<std::uint64_t>(k.communicator), static_cast<std::uint64_t>(k.stage),
                        static_cast<std::uint64_t>(k.instance), static_cast<std::uint64_t>(k.purpose),
                        static_cast<std::uint64_t>(k.microbatch), static_cast<std::uint64_t>(k.unit),
                        static_cast<std::uint64_t>(k.bucket), static_cast<std::uint64_t>(k.first_try)});
  }
};

// One activation (or activation-gradient) transfer between two stages.
struct TransferKey {
  std::int64_t from_stage = 0;
  std::int64_t to_stage = 0;
  std::int64_t dp = 0;  // the index in its stage both ends share (RankCoords::stage_rank)
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;  // the model chunk both sides name the transfer by
  bool gradients = false;  // backward: activation gradients
  bool first_try = false;  // in the first try of a rerun step (set by StepEmitter::transfer)
  auto operator<=>(const TransferKey&) const = default;
};

struct TransferKeyHash {
  std::size_t operator()(const TransferKey& k) const noexcept {
    return hash_fields({static_cast<std::uint64_t>(k.from_stage), static_cast<std::uint64_t>(k.to_stage),
                        static_cast<std::uint64_t>(k.dp), static_cast<std::uint64_t>(k.microbatch),
                        static_cast<std::uint64_t>(k.chunk), static_cast<std::uint64_t>(k.gradients),
                        static_cast<std::uint64_t>(k.first_try)});
  }
};

// Where a task runs and what it belongs to.
struct TaskPlace {
  std::uint32_t rank = 0;
  StreamKind stream = StreamKind::compute;
  PhaseTag phase = PhaseTag::forward;
  std::int32_t microbatch = -1;
  std::int64_t layer = -1;
};

struct CollectiveCall {
  Communicator communicator = Communicator::dp;
  CollectivePurpose purpose = CollectivePurpose::grad_norm;
  // On the EP-MP communicator: the collective the plan's EP transport runs in that direction
  // (ep_collective_request); a reduce-scatter there carries rows back from the experts.
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes = 0;  // nccl-tests convention (collective_model.hpp)
  std::int32_t bucket = -1;
};

// The cost book's request for `kind` moving `bytes` over a communicator of `shape`.
CollectiveRequest collective_request(CollectiveKind kind, double bytes, const CommunicatorShape& shape);

class StepEmitter {
 public:
  StepEmitter(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, BuiltStep& step);

  const CostBook& costs() const { return costs_; }

  // While on, what is added belongs to the first try of a step the sync-free MoE path reruns
  // (models/plan/sync_free.hpp): its tasks are charged to PhaseTag::rerun and its collectives and
  // transfers are calls of their own, apart from the second try's of the same name.
  void set_first_try(bool on) { first_try_ = on; }

  // A kernel that takes `work_s` alone; `what` is its trace label (a literal: the task keeps the
  // pointer). Runs after `after` and `also_after` (kNoTask: no such dependency) and after the
  // previous task on its stream.
  TaskId kernel(const TaskPlace& at, TaskKind kind, double work_s, const char* what, TaskId after = kNoTask,
                TaskId also_after = kNoTask);
  // A kernel bound by HBM traffic alone, moving `bytes` (read + written).
  TaskId memory_kernel(const TaskPlace& at, double bytes, MemoryKernel kind, const char* what, TaskId after = kNoTask,
                       TaskId also_after = kNoTask);
  // This rank's member of a collective; `at.layer` is the unit it serves. Calls on the EP-MP
  // communicator are the plan's EP transport (CostBook::ep_transfer).
  TaskId collective(const TaskPlace& at, const CollectiveCall& call, TaskId after);
  // Room for `transfers` distinct transfers between stages (a pipeline step's keys, matched
  // without regrowing the table).
  void reserve_transfers(std::size_t transfers) { transfer_groups_.reserve(transfers); }
  // This rank's side of a transfer between stages, on the PP stream.
  TaskId transfer(std::uint32_t rank, const TransferKey& key, double bytes, TaskId after);
  // `after` starts only once `before` finished (kNoTask: nothing).
  void depend(TaskId before, TaskId after) { step_.graph.depend(before, after); }
  // The last task added to `rank`'s `stream` so far (kNoTask: none): what a cross-stream wait on
  // that stream's current work (cudaStreamWaitEvent after an event record) waits for.
  TaskId last_on(std::uint32_t rank, StreamKind stream) const;

 private:
  const CommCost& priced(CollectiveKind kind, double bytes, const CommunicatorShape& shape);
  const CommCost& priced_ep_transfer(double bytes, bool toward_experts);
  // Adds the task `fill` writes (in place, in the graph) with its dependencies.
  template <class Fill>
  TaskId add(Fill&& fill, TaskId after, TaskId also_after = kNoTask) {
    const TaskId id = step_.graph.add_filled(fill);
    step_.graph.depend(after, id);
    step_.graph.depend(also_after, id);
    return id;
  }
  void place(Task& t, const TaskPlace& at, TaskKind kind, double work_s) const;
  void place_communication(Task& t, const TaskPlace& at, TaskKind kind, CollectiveKind coll, const CommCost& cost,
                           std::uint32_t group) const;

  const Architecture& arch_;
  const ParallelPlan& plan_;
  const CostBook& costs_;
  BuiltStep& step_;
  bool first_try_ = false;
  GroupIndex<CollectiveKey, CollectiveKeyHash> collective_groups_;
  GroupIndex<TransferKey, TransferKeyHash> transfer_groups_;
  std::map<std::tuple<CollectiveKind, double, std::int64_t, std::int64_t>, CommCost> prices_;
  // By bytes and direction (EpTransferRequest::toward_experts): the EP-MP group and transport are the plan's.
  using EpPriceKey = std::pair<double, bool>;
  std::map<EpPriceKey, CommCost> ep_prices_;
  const std::pair<const EpPriceKey, CommCost>* last_ep_price_ = nullptr;  // the last one looked up
};

}  // namespace moesim
