#include "sim/schedules/pipeline_transfers.hpp"

#include <algorithm>

namespace moesim {

PipelineTransfers::PipelineTransfers(const ParallelPlan& plan, double activation_bytes)
    : plan_(plan), virtual_stages_(plan.pp * plan.model_chunks()), activation_bytes_(activation_bytes) {}

bool PipelineTransfers::starts_model(const SimRank& rank, const PipeOp& op) const {
  return virtual_stage_of(plan_, rank.stage, op.chunk) == 0;
}

bool PipelineTransfers::ends_model(const SimRank& rank, const PipeOp& op) const {
  return virtual_stage_of(plan_, rank.stage, op.chunk) == virtual_stages_ - 1;
}

TaskId PipelineTransfers::transfer(StepEmitter& emit, std::uint32_t rank, const SimRank& coords, const PipeOp& op,
                                   std::int64_t from, std::int64_t to, TaskId after) const {
  const LayerPlace sender = place_of_virtual_stage(plan_, from), receiver = place_of_virtual_stage(plan_, to);
  if (sender.stage == receiver.stage) return kNoTask;
  const auto chunk = static_cast<std::int32_t>(place_of_virtual_stage(plan_, std::max(from, to)).chunk);
  return emit.transfer(rank, {sender.stage, receiver.stage, coords.stage_rank, op.microbatch, chunk, !op.forward},
                       activation_bytes_, after);
}

TaskId PipelineTransfers::receive(StepEmitter& emit, std::uint32_t rank, const SimRank& coords,
                                  const PipeOp& op) const {
  if (op.part == BackwardPart::weight) return kNoTask;
  const std::int64_t j = virtual_stage_of(plan_, coords.stage, op.chunk);
  if (op.forward) return starts_model(coords, op) ? kNoTask : transfer(emit, rank, coords, op, j - 1, j, kNoTask);
  return ends_model(coords, op) ? kNoTask : transfer(emit, rank, coords, op, j + 1, j, kNoTask);
}

TaskId PipelineTransfers::send(StepEmitter& emit, std::uint32_t rank, const SimRank& coords, const PipeOp& op,
                               TaskId after) const {
  if (op.part == BackwardPart::weight) return kNoTask;
  const std::int64_t j = virtual_stage_of(plan_, coords.stage, op.chunk);
  if (op.forward) return ends_model(coords, op) ? kNoTask : transfer(emit, rank, coords, op, j, j + 1, after);
  return starts_model(coords, op) ? kNoTask : transfer(emit, rank, coords, op, j, j - 1, after);
}

}  // namespace moesim
