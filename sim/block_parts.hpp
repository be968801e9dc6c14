// The parts of a block before the EP dispatch as the step runs them: the communication at the
// points between them (tensor parallelism's collectives, context parallelism's ring passes or
// all-to-alls) and each part's trace label.
#pragma once

#include "models/costs/layer_work.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

// The communication at point `i` of a block's parts before the dispatch, in the pass's
// direction (`recompute`: a forward again): returns what the next part waits for. A ring's
// passes run beside the attention: where they open, `ring` takes their last pass; where they
// close, it moves to `pending`, which the next kernel waits for too.
TaskId layer_point(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w, std::size_t i,
                   bool backward, bool recompute, TaskId ready, TaskId& ring, TaskId& pending);

// The trace label of part `i` (a literal): the whole block without points, else named by the
// part's first op.
const char* part_label(const LayerWork& w, std::size_t i, bool backward);

}  // namespace moesim
