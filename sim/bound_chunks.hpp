// The step-time bound's view of one model chunk (sim/step_bound.cpp): a pass's compute-stream
// time through it, and when microbatch 0's gradient can first reach it.
#pragma once

#include <vector>

#include "models/plan/parallel_plan.hpp"
#include "sim/pipeline_schedule.hpp"

namespace moesim {

// Compute-stream time of one microbatch through one model chunk of one stage, each direction,
// as the step builder lays it out (sim/step_builder.cpp): a MoE block's stream waits for the
// dispatch all-to-all, the routed experts, the combine all-to-all (or the shared expert on the
// side stream, whichever is longer) before its combine kernel.
struct ChunkTimes {
  double fwd = 0;
  double bwd = 0;    // the whole backward
  double input = 0;  // its B part (input gradients) when the schedule splits it
  double wgrad = 0;  // its W part (weight gradients)
  double of(const PipeOp& op) const {
    if (op.forward) return fwd;
    return op.part == BackwardPart::whole ? bwd : op.part == BackwardPart::input ? input : wgrad;
  }
};

// For each chunk of each stage (`fastest`: its times at its fastest shard; `places`: every layer's
// stage and chunk), the least time microbatch 0 takes from the first stage's start until its
// gradient reaches it: its forward through every model chunk in model order, then its backward
// (the B part where `split`) through the chunks after this one, with `hop` between chunks on
// different stages.
std::vector<std::vector<double>> gradient_arrivals(const std::vector<std::vector<ChunkTimes>>& fastest,
                                                   const std::vector<LayerPlace>& places, double hop, bool split);

}  // namespace moesim
