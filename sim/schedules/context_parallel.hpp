// Context parallelism as a composable piece of the step: the exchanges around one attention call
// when each sequence is split over CP ranks. The ring variant passes K and V chunks to the next
// rank while the attention works on the chunk it holds (CP - 1 steps on the CP stream, beside the
// attention kernel; its backward passes K, V and their gradients); the all-to-all variant
// exchanges q, k, v before and the output after the attention, and the compute stream waits.
#pragma once

#include "sim/step_emitter.hpp"

namespace moesim {

enum class CpPass { forward, recompute, backward };

// The ring's CP - 1 passes of `bytes` each (the rank's K and V chunk; twice that in backward),
// one after another from `ready`; the last one's task, or `ready` without CP.
TaskId cp_ring(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, CpPass pass, double bytes,
               TaskId ready);

// One all-to-all of the variant (`index` 0: q, k, v; 1: the output) moving `bytes` per rank.
TaskId cp_all_to_all(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, CpPass pass, std::int32_t index,
                     double bytes, TaskId ready);

}  // namespace moesim
