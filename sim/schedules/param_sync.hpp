// Parameter-sync strategies: how a design moves parameters and gradients around the compute of
// a step (FSDP2's per-unit gathers and reduce-scatters, Olmo-core DDP's accumulation, bucketed
// reduction and weight rebuild, ...). The step builder calls a strategy's hooks at fixed points
// of each simulated rank's schedule; a new design is one new file registered here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/common/registry.hpp"
#include "models/costs/cost_book.hpp"
#include "models/costs/optimizer_traffic.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/step_emitter.hpp"
#include "sim/unit_table.hpp"

namespace moesim {

struct PipeOp;  // sim/pipeline_schedule.hpp

// What a strategy knows of the simulated rank it serves. Units are FSDP units / DDP layers:
// -1 the embedding, 0..L-1 the blocks, L the final norm and LM head.
struct RankContext {
  std::uint32_t rank = 0;
  const SimRank& coords;
  const ParallelPlan& plan;
  std::int64_t microbatches = 1;
  std::int64_t last_unit = 0;                  // the final norm and LM head (num_layers)
  bool tied_embeddings = false;                // the LM head is the embedding
  const std::vector<LocalTensor>& tensors;     // the stage's tensors as this rank holds them
  const UnitTable<double>& local_params;       // elements held per unit (FSDP: gathered when it runs)
  const UnitTable<double>& unit_expert_numel;  // of which routed experts (their own shard group)
  const UnitTable<std::int32_t>& unit_chunk;   // the model chunk whose passes run the unit (-1: none here)
  StepEmitter& emit;
};

// A unit about to run in a forward or backward pass.
struct UnitVisit {
  bool backward = false;
  const std::vector<std::int64_t>& units;  // the pass's units in execution order
  std::size_t index = 0;                   // this one
  std::int32_t microbatch = 0;
};

class ParamSync {
 public:
  virtual ~ParamSync() = default;
  // Before the rank's first pass (buffers zeroed once per step).
  virtual void start_of_step();
  // Before the unit's compute: returns the task that compute must follow (default `ready`).
  virtual TaskId before_unit(const UnitVisit& visit, TaskId ready);
  // After the unit's backward compute produced its gradients (`grads_ready`).
  virtual void after_unit_backward(std::int64_t unit, std::int32_t microbatch, TaskId grads_ready);
  // After the rank's last pass: gradient norm, optimizer update, weight rebuild.
  virtual void end_of_step() = 0;
  // Between the two tries of a step the sync-free MoE path reruns (models/plan/sync_free.hpp):
  // what ends the first try's forward-backward (its gradient reductions, which
  // finalize_model_grads waits for) and the zeroing of its gradients for the second
  // (PagedStashRunner.prepare_for_rerun: zero_grad_buffer); the parameters stay as the first try
  // left them. Returns the task the second try follows. Strategies whose designs allow a rerun
  // step override it; the others' designs refuse one (the default throws std::logic_error).
  virtual TaskId between_tries();
};

// One pipeline stage of a plan, as a bound on the strategy's step sees it (sim/step_bound.hpp).
struct SyncStage {
  const Architecture& arch;
  const std::vector<LocalTensor>& tensors;  // the stage's, as a rank of it holds them (stage_tensors)
  const ParallelPlan& plan;
  const CostBook& costs;
  std::int64_t microbatches = 1;
  std::int64_t stage = 0;
  const std::vector<PipeOp>& order;  // the stage's passes in order (stage_schedule), as the bound has them
};
// The elements of each unit a rank of the stage gathers, and of them the routed experts', for the
// units the stage's passes run (the step builder's: the embedding only where the model starts, so
// a tied embedding's copy on the head's stage is not one).
struct StageUnits {
  UnitTable<double> numel, expert_numel;
};
StageUnits stage_units(const SyncStage& stage);

// The compute-stream kernels a strategy's hooks add on one rank of the stage in a step, each at
// its solo time: once at the step's start, and per pass of a model chunk by the hook that runs
// them (sim/step_bound.hpp adds them to the stage's compute chain).
struct ComputeShare {
  double at_start = 0;            // start_of_step
  std::vector<double> forward;    // per chunk: before_unit in a forward pass
  std::vector<double> backward;   // per chunk: before_unit in a backward pass (none in its W part)
  std::vector<double> gradients;  // per chunk: after_unit_backward (a whole backward or its W part)
  // Per chunk: the least gap before a forward pass's first compute kernel, waited for after the
  // stream's work before the pass (FSDP2's first gather), which may overlap a wait for its input.
  std::vector<double> forward_wait;
  // Once per step, somewhere between the first pass's first kernel and the last pass's end, where
  // the stage's order decides (FSDP2 under a pipeline: the copy-outs of its gathers).
  double in_passes = 0;
};
// What one unit's hooks add (ComputeShare's per-pass parts).
struct UnitShare {
  double forward = 0, backward = 0, gradients = 0;
};
// The share of every unit the stage's passes run with elements on its ranks (`units`), summed per
// model chunk; `of(unit)` prices one.
ComputeShare unit_shares(const SyncStage& s, const StageUnits& units, const std::function<UnitShare(std::int64_t)>& of);

// What a strategy runs one after another once the step's last microbatch starts a backward pass
// with gradient hooks on the stage (`after_passes`: once the stage's last pass has ended): its
// reductions, then the optimizer step's chain.
struct FinalSync {
  double s = 0;
  bool after_passes = false;
};

// What a strategy adds to a lower bound on a stage's step (sim/step_bound.hpp), each task at its
// solo time: no replay ends the step sooner.
struct SyncBounds {
  double serial_s = 0;   // the collectives it runs one after another on one stream from the start
  ComputeShare compute;  // its kernels on the compute stream
  FinalSync final;
};

class ParamSyncModel : public Registered {
 public:
  using Registered::Registered;
  virtual std::unique_ptr<ParamSync> make(const RankContext& rank) const = 0;
  // None by default: a lower bound stays one.
  virtual SyncBounds stage_bounds(const SyncStage&) const { return {}; }
};

// The registry entry of a strategy class constructible from a RankContext; its bounds are the
// class's static `stage_bounds(const SyncStage&)` where it has one.
template <class Strategy>
class StrategyModel final : public ParamSyncModel {
 public:
  using ParamSyncModel::ParamSyncModel;
  std::unique_ptr<ParamSync> make(const RankContext& rank) const override { return std::make_unique<Strategy>(rank); }
  SyncBounds stage_bounds(const SyncStage& s) const override {
    if constexpr (requires { Strategy::stage_bounds(s); }) {
      return Strategy::stage_bounds(s);
    } else {
      return {};
    }
  }
};

const Registry<ParamSyncModel>& param_sync_models();  // "fsdp2_full_reshard", "ddp_distributed_optimizer"
// The strategy the plan's design names (models/plan/designs/ DesignEntry::param_sync).
const ParamSyncModel& param_sync_for(const ParallelPlan& plan);

// Pieces both designs' optimizer steps share.
// Gradient clipping over `elements` FP32 gradient elements held by this rank, after every
// reduction in `reductions`: per-tensor norms (one read), one small all-reduce of their squares,
// then every gradient scaled in place (read + write): torch.nn.utils.get_total_norm and
// clip_grads_with_norm_ (FSDP2), OLMoDDPOptimizer._clip_grad (Olmo-core DDP). Returns the last.
TaskId clip_gradients(const RankContext& rank, double elements, const std::vector<TaskId>& reductions);
// The loss averaged over the data-parallel ranks: one small all-reduce per step.
TaskId loss_all_reduce(const RankContext& rank);
// Their solo times for the bounds: the loss all-reduce; the clip's gradient-norm all-reduce and
// then its scale of `elements` (its norms run beside what precedes them).
double loss_all_reduce_s(const SyncStage& s);
double clip_after_reductions_s(const SyncStage& s, double elements);
// One collective's solo time, as the step emitter prices it.
double solo_collective_s(const SyncStage& s, CollectiveKind kind, double bytes, Communicator communicator);

// Registration hooks of the strategies (one per file).
std::unique_ptr<ParamSyncModel> make_fsdp2_full_reshard();
std::unique_ptr<ParamSyncModel> make_fsdp2_shard_grad_op();
std::unique_ptr<ParamSyncModel> make_fsdp1_full_shard();
std::unique_ptr<ParamSyncModel> make_zero2();
std::unique_ptr<ParamSyncModel> make_ddp_distributed_optimizer();

}  // namespace moesim
