// A MoE block's pass in the pieces the step runs it in: the front (forward: the parts before the
// dispatch and the shared expert beside them on its own stream; backward: the combine's backward
// kernel and the shared expert's backward), the routed experts' transfer in, GEMMs and transfer
// out (sim/schedules/expert_parallel.hpp), and the back (forward: the combine kernel; backward:
// the parts before the dispatch, in reverse). Run in that order they are the block's pass; the EP
// all-to-all overlap interleaves the pieces of a forward and a backward block
// (sim/step_builder.cpp).
#pragma once

#include "models/costs/layer_work.hpp"
#include "sim/paged_stash_copies.hpp"
#include "sim/schedules/expert_parallel.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

class MoeBlockPass {
 public:
  // `at`: rank, phase (forward, recompute or backward), microbatch and layer. `whole`: a
  // backward's whole, else its input-gradient part (B).
  MoeBlockPass(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w, bool whole = true);
  // The paged stash's copies around the grouped MLP (none by default).
  MoeBlockPass& with(PagedStashCopies* stash) {
    stash_ = stash;
    return *this;
  }

  // The whole pass in order; returns its last task.
  TaskId run(TaskId ready) { return back(experts_out(experts(experts_in(front(ready))))); }
  TaskId front(TaskId ready);
  TaskId experts_in(TaskId ready) const;
  TaskId experts(TaskId ready);
  TaskId experts_out(TaskId ready) const;
  TaskId back(TaskId routed);
  // Megatron-Core's delay_wgrad_compute under the EP all-to-all overlap (a backward built with
  // whole = false; model_chunk_schedule_plan.py): the MLP's weight gradients, routed and shared
  // experts (mlp.backward_dw), once the dispatch's gradient is issued; the attention's
  // (pre_dispatch_computation.backward_dw) after its input gradients. One kernel each.
  TaskId mlp_weight_gradients(TaskId ready) const;
  TaskId attention_weight_gradients(TaskId ready) const;

 private:
  bool backward() const { return at_.phase == PhaseTag::backward; }
  double time(const PassTimes& t) const { return whole_ ? t.bwd : t.input_grad(); }

  StepEmitter& emit_;
  const ParallelPlan& plan_;
  TaskPlace at_;
  const LayerWork& w_;
  bool whole_;
  ExpertPass pass_;
  RoutedExperts routed_;
  TaskId shared_ = kNoTask;  // the shared expert's last task
  PagedStashCopies* stash_ = nullptr;
};

}  // namespace moesim
