#include "sim/schedules/context_parallel.hpp"

namespace moesim {

namespace {

CollectivePurpose purpose_of(CpPass pass) {
  switch (pass) {
    case CpPass::forward: return CollectivePurpose::cp_forward;
    case CpPass::recompute: return CollectivePurpose::cp_recompute;
    case CpPass::backward: return CollectivePurpose::cp_backward;
  }
  return CollectivePurpose::cp_forward;
}

TaskPlace comm_place(const TaskPlace& at) {
  return {at.rank, StreamKind::comm_cp, PhaseTag::cp_comm, at.microbatch, at.layer};
}

}  // namespace

TaskId cp_ring(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, CpPass pass, double bytes,
               TaskId ready) {
  // Transformer Engine's backward sends the K/V chunk and its gradient each step.
  const double step_bytes = pass == CpPass::backward ? 2 * bytes : bytes;
  TaskId out = ready;
  for (std::int64_t step = 1; step < plan.cp; ++step) {
    out = emit.collective(comm_place(at),
                          {Communicator::cp_ring, purpose_of(pass), CollectiveKind::send_recv, step_bytes,
                           static_cast<std::int32_t>(step)},
                          out);
  }
  return out;
}

TaskId cp_all_to_all(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, CpPass pass, std::int32_t index,
                     double bytes, TaskId ready) {
  if (plan.cp == 1) return ready;
  return emit.collective(comm_place(at), {Communicator::cp, purpose_of(pass), CollectiveKind::all_to_all, bytes, index},
                         ready);
}

}  // namespace moesim
