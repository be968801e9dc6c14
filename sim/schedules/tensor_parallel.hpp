// Tensor parallelism as a composable piece of the step: the collectives at the points where a
// block's (or the embedding's and LM head's) tensor-parallel regions open and close, on the TP
// communicator and the TP stream; the compute stream waits for each (they sit on the critical
// path: Megatron-LM runs them in the layer's own stream unless TP communication overlap is on).
#pragma once

#include "models/costs/layer_work.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

enum class TpPass { forward, recompute, backward };

// The collective of TP point `point` in `pass` moving `bytes` (nccl-tests convention), after
// `ready`; `index` tells the unit's points apart. Returns `ready` when the point has no
// collective in that direction or TP is off.
TaskId tp_point(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, LayerPoint point, TpPass pass,
                std::int32_t index, double bytes, TaskId ready);

// Vocab-parallel cross-entropy's three all-reduces over the TP group, each of one FP32 value per
// token (the logits' maximum, the target logit and the sum of exponentials: Megatron-LM
// tensor_parallel/cross_entropy.py); forward only. `index` is that of the first.
TaskId vocab_parallel_loss(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, std::int32_t index,
                           double tokens, TaskId ready);

}  // namespace moesim
