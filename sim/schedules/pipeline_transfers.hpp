// Pipeline parallelism as a composable piece of the step: the activation transfers between
// stages. A pass's input arrives from the previous virtual stage (forward) or the next one
// (backward), and its output leaves to the other side, point-to-point on the PP stream. Where
// each virtual stage runs is the plan's (place_of_virtual_stage: Megatron-LM's interleaved
// placement, or a V); neighbours on one stage (the V's turn) hand over on the stage's own
// compute stream, with no transfer. A W pass (weight gradients) sends and receives nothing.
#pragma once

#include "sim/pipeline_schedule.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

class PipelineTransfers {
 public:
  // `activation_bytes`: one microbatch's hidden states (= their gradients).
  PipelineTransfers(const ParallelPlan& plan, double activation_bytes);

  bool starts_model(const SimRank& rank, const PipeOp& op) const;  // the first virtual stage
  bool ends_model(const SimRank& rank, const PipeOp& op) const;    // the last virtual stage

  // The pass's input from its neighbour; kNoTask where the pass starts the model (forward) or
  // ends it (backward), or where its neighbour is on the same stage.
  TaskId receive(StepEmitter& emit, std::uint32_t rank, const SimRank& coords, const PipeOp& op) const;
  // The pass's output to its neighbour after `after`; kNoTask where nothing is sent.
  TaskId send(StepEmitter& emit, std::uint32_t rank, const SimRank& coords, const PipeOp& op, TaskId after) const;

 private:
  // The transfer between virtual stages `from` and `to` (neighbours): both sides name it by the
  // two stages and the chunk of the later virtual stage. Nothing when both run on one stage.
  TaskId transfer(StepEmitter& emit, std::uint32_t rank, const SimRank& coords, const PipeOp& op, std::int64_t from,
                  std::int64_t to, TaskId after) const;

  const ParallelPlan& plan_;
  std::int64_t virtual_stages_;
  double activation_bytes_;
};

}  // namespace moesim
