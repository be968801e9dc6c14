// Order of forward and backward passes on each pipeline stage: plain gradient accumulation
// (no PP), 1F1B (PipeDream-Flush, Narayanan et al. 2021) and interleaved 1F1B (Megatron-LM).
#pragma once

#include <cstdint>
#include <vector>

#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct PipeOp {
  bool forward = true;
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;  // model chunk (virtual stage index on this stage)
};

std::vector<PipeOp> stage_schedule(const ParallelPlan& plan, std::int64_t stage, std::int64_t microbatches);

}  // namespace moesim
