// Order of forward and backward passes on each pipeline stage: plain gradient accumulation
// (no PP), 1F1B (PipeDream-Flush, Narayanan et al. 2021), interleaved 1F1B (Megatron-LM), the
// V-shape 1F1B-V, and the zero-bubble orders that split the backward into an input-gradient pass
// (B) and a weight-gradient pass (W): ZB-H1 and ZB-V (Qi et al. 2023, arXiv 2401.10241).
#pragma once

#include <cstdint>
#include <vector>

#include "models/memory/ledger.hpp"
#include "models/plan/parallel_plan.hpp"
#include "sim/allocation_order.hpp"

namespace moesim {

// Which part of a backward a pass runs: all of it, or the zero-bubble schedules' B (input
// gradients, what the previous stage waits for) or W (weight gradients, deferrable).
enum class BackwardPart : std::uint8_t { whole, input, weight };

struct PipeOp {
  bool forward = true;
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;                   // model chunk (virtual stage index on this stage)
  BackwardPart part = BackwardPart::whole;  // a backward's part
  // A forward that runs fused with the backward after it, layer by layer (the EP all-to-all
  // overlap's combined 1F1B: model_chunk_schedule_plan.py TransformerModelChunkSchedulePlan.run).
  bool fused_with_next = false;
  // A microbatch-chunk's saved activations are held from its forward until its whole backward
  // or, split, until its W pass ends. Conservative for W: the B pass frees most of them, W keeps
  // only its inputs and the output gradients (the paper's M_W < M_B).
  bool frees() const { return !forward && part != BackwardPart::input; }
  int held_change() const { return forward ? 1 : frees() ? -1 : 0; }
};

// Every schedule's order is documented where it is built (pipeline_schedule.cpp). Any microbatch
// count m >= 1 gives a valid order; interleaved 1F1B needs m a multiple of P (plan validation).
std::vector<PipeOp> stage_schedule(const ParallelPlan& plan, std::int64_t stage, std::int64_t microbatches);

// Model chunks whose activations a stage holds at once: the most forward passes not yet matched
// by the pass that frees them along the stage's op order (its compute stream runs the passes in
// this order, so the replay holds exactly these).
std::int64_t peak_chunks_in_flight(const std::vector<PipeOp>& ops);

// Passes held per chunk at the first moment the stage holds peak_chunks_in_flight of them —
// what the memory ledger charges, each chunk for its own layers.
std::vector<std::int64_t> peak_chunk_mix(const std::vector<PipeOp>& ops, std::int64_t chunks);

// Each stage's passes as the allocation order walks them (allocation_order.hpp).
std::vector<std::vector<StagePass>> stage_pass_orders(const ParallelPlan& plan, std::int64_t microbatches);

// Every stage's count from its op order, and the allocation replay over that order: what
// `moesim ledger` uses without a replay.
InFlight schedule_in_flight(const ParallelPlan& plan, std::int64_t microbatches);

}  // namespace moesim
