// What one unit (the embedding, a layer block, the LM head with its loss) emits on one rank for
// one microbatch's pass: its forward (or recompute), its backward (whole, or the input-gradient
// part B when the schedule splits it), and its W pass. The step builder (step_builder.cpp)
// decides the order of units and passes; this room holds what a unit's pass is made of.
#pragma once

#include <cstdint>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/costs/layer_work.hpp"
#include "models/plan/parallel_plan.hpp"
#include "sim/paged_stash_copies.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/schedules/tensor_parallel.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

// One simulated rank's kernels by unit.
struct RankUnitWork {
  std::vector<LayerWork> layers;  // by layer index (this stage's only)
  EdgeWork edge;                  // the embedding's and the LM head's
  // By microbatch: the end of its loss under TP (the vocab-parallel reductions after the head's
  // kernel), which the head's backward waits for.
  std::vector<TaskId> loss_done;
};

class UnitPasses {
 public:
  // `stash`: the paged stash's copies around each MoE layer's grouped MLP.
  UnitPasses(const Architecture& arch, const ParallelPlan& plan, StepEmitter& emit, double tokens,
             PagedStashCopies& stash);

  // Unit `u`'s forward (phase forward) or its recompute before its backward (phase recompute).
  void forward(RankUnitWork& work, std::uint32_t r, std::int64_t u, std::int32_t mb, PhaseTag phase,
               TaskId& cursor) const;
  // The unit's whole backward, or only its input-gradient part (B) when the schedule splits it:
  // everything but the GEMMs' weight gradients, recompute and the EP all-to-alls included.
  void backward(RankUnitWork& work, std::uint32_t r, std::int64_t u, std::int32_t mb, BackwardPart part,
                TaskId& cursor) const;
  // The unit's W pass: its GEMMs' weight gradients as one kernel on the compute stream (the
  // shared expert's too: nothing runs beside them to overlap); the embedding has none.
  void weight_gradients(const RankUnitWork& work, std::uint32_t r, std::int64_t u, std::int32_t mb,
                        TaskId& cursor) const;

  // The [T, d] activations the embedding's and the LM head's TP collectives move.
  double edge_tp_bytes() const { return edge_tp_bytes_; }

 private:
  // A TP point of a unit in `pass` (nothing without TP, or where the point has no collective).
  TaskId tp(const TaskPlace& at, LayerPoint point, TpPass pass, std::size_t index, double bytes, TaskId ready) const;

  const Architecture& arch_;
  const ParallelPlan& plan_;
  StepEmitter& emit_;
  PagedStashCopies& stash_;
  double tokens_ = 0;
  double edge_tp_bytes_ = 0;
};

}  // namespace moesim
