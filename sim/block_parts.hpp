// The parts of a block before the EP dispatch as the step runs them: each part as one kernel, and
// the communication at the points between them (tensor parallelism's collectives, run beside the
// GEMM next to them under TP communication overlap; context parallelism's ring passes beside the
// attention, or its all-to-alls).
#pragma once

#include "models/costs/layer_work.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

struct PartsPass {
  bool backward = false;
  bool recompute = false;       // a forward run again before the backward
  bool whole = true;            // backward: the whole of it, else its input-gradient part (B)
  double extra_first = 0;       // added to the first kernel (a dense block's partial recompute)
  TaskId also_first = kNoTask;  // what the first kernel waits for too (the experts' backward)
};

// Emits the parts in the pass's order (backward: last part first) after `ready`; returns the
// last task, after which everything of the parts has finished.
TaskId emit_parts(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w,
                  const PartsPass& pass, TaskId ready);

}  // namespace moesim
