// Order of forward and backward passes on each pipeline stage: plain gradient accumulation
// (no PP), 1F1B (PipeDream-Flush, Narayanan et al. 2021) and interleaved 1F1B (Megatron-LM).
#pragma once

#include <cstdint>
#include <vector>

#include "models/memory/ledger.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct PipeOp {
  bool forward = true;
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;  // model chunk (virtual stage index on this stage)
};

std::vector<PipeOp> stage_schedule(const ParallelPlan& plan, std::int64_t stage, std::int64_t microbatches);

// Model chunks whose activations a stage holds at once: the most forward passes not yet matched
// by their backward along the stage's op order (its compute stream runs the passes in this
// order, so the replay holds exactly these).
std::int64_t peak_chunks_in_flight(const std::vector<PipeOp>& ops);

// Passes held per chunk at the first moment the stage holds peak_chunks_in_flight of them —
// what the memory ledger charges, each chunk for its own layers.
std::vector<std::int64_t> peak_chunk_mix(const std::vector<PipeOp>& ops, std::int64_t chunks);

// Every stage's count from its op order: what `moesim ledger` uses without a replay.
InFlight schedule_in_flight(const ParallelPlan& plan, std::int64_t microbatches);

}  // namespace moesim
