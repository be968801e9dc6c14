#include "sim/schedules/pipeline_transfers.hpp"

namespace moesim {

PipelineTransfers::PipelineTransfers(const ParallelPlan& plan, double activation_bytes)
    : plan_(plan),
      virtual_stages_(plan.model_chunks()),
      activation_bytes_(activation_bytes) {}

bool PipelineTransfers::starts_model(const SimRank& rank, const PipeOp& op) const {
  return rank.stage == 0 && op.chunk == 0;
}

bool PipelineTransfers::ends_model(const SimRank& rank, const PipeOp& op) const {
  return rank.stage == plan_.pp - 1 && op.chunk == virtual_stages_ - 1;
}

TransferKey PipelineTransfers::key(std::int64_t from, std::int64_t to, const SimRank& coords, const PipeOp& op,
                                   std::int32_t chunk) const {
  return {from, to, coords.dp, op.microbatch, chunk, !op.forward};
}

TaskId PipelineTransfers::receive(StepEmitter& emit, std::uint32_t rank, const SimRank& coords,
                                  const PipeOp& op) const {
  const std::int64_t stage = coords.stage, stages = plan_.pp;
  // The last stage's chunk c hands over to the first stage's chunk c + 1.
  const std::int32_t wraps = stage == stages - 1 ? 1 : 0;
  if (op.forward) {
    if (starts_model(coords, op)) return kNoTask;
    return emit.transfer(rank, key((stage + stages - 1) % stages, stage, coords, op, op.chunk), activation_bytes_,
                         kNoTask);
  }
  if (ends_model(coords, op)) return kNoTask;
  return emit.transfer(rank, key((stage + 1) % stages, stage, coords, op, op.chunk + wraps), activation_bytes_,
                       kNoTask);
}

TaskId PipelineTransfers::send(StepEmitter& emit, std::uint32_t rank, const SimRank& coords, const PipeOp& op,
                               TaskId after) const {
  const std::int64_t stage = coords.stage, stages = plan_.pp;
  const std::int32_t wraps = stage == stages - 1 ? 1 : 0;
  if (op.forward) {
    if (ends_model(coords, op)) return kNoTask;
    return emit.transfer(rank, key(stage, (stage + 1) % stages, coords, op, op.chunk + wraps), activation_bytes_,
                         after);
  }
  if (starts_model(coords, op)) return kNoTask;
  return emit.transfer(rank, key(stage, (stage + stages - 1) % stages, coords, op, op.chunk), activation_bytes_, after);
}

}  // namespace moesim
