#include "sim/schedules/tensor_parallel.hpp"

#include "models/common/units.hpp"

namespace moesim {

namespace {

CollectivePurpose purpose_of(TpPass pass) {
  switch (pass) {
    case TpPass::forward: return CollectivePurpose::tp_forward;
    case TpPass::recompute: return CollectivePurpose::tp_recompute;
    case TpPass::backward: return CollectivePurpose::tp_backward;
  }
  return CollectivePurpose::tp_forward;
}

}  // namespace

TaskId tp_point(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, LayerPoint point, TpPass pass,
                std::int32_t index, double bytes, TaskId ready) {
  if (plan.tp == 1) return ready;
  const TpCollective c = tp_collective(point, pass == TpPass::backward, plan.sequence_parallel);
  if (!c.has) return ready;
  const TaskPlace comm{at.rank, StreamKind::comm_tp, PhaseTag::tp_comm, at.microbatch, at.layer};
  return emit.collective(comm, {Communicator::tp, purpose_of(pass), c.kind, bytes, index}, ready);
}

TaskId vocab_parallel_loss(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, std::int32_t index,
                           double tokens, TaskId ready) {
  if (plan.tp == 1) return ready;
  constexpr int kReductions = 3;
  const TaskPlace comm{at.rank, StreamKind::comm_tp, PhaseTag::tp_comm, at.microbatch, at.layer};
  TaskId out = ready;
  for (int i = 0; i < kReductions; ++i) {
    out = emit.collective(comm,
                          {Communicator::tp, CollectivePurpose::tp_forward, CollectiveKind::all_reduce,
                           tokens * bytes_of(DType::fp32), index + i},
                          out);
  }
  return out;
}

}  // namespace moesim
