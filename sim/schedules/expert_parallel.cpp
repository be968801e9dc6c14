#include "sim/schedules/expert_parallel.hpp"

namespace moesim {

namespace {

struct A2aPair {
  CollectivePurpose before;  // the all-to-all that brings this rank its rows
  CollectivePurpose after;   // the one that returns them
};

A2aPair purposes(ExpertPass pass) {
  switch (pass) {
    case ExpertPass::forward: return {CollectivePurpose::ep_dispatch_forward, CollectivePurpose::ep_combine_forward};
    case ExpertPass::recompute:
      return {CollectivePurpose::ep_dispatch_recompute, CollectivePurpose::ep_combine_recompute};
    case ExpertPass::backward: return {CollectivePurpose::ep_combine_backward, CollectivePurpose::ep_dispatch_backward};
  }
  return {};
}

// Backward runs the pair in reverse: the combine's gradient brings the rows, the dispatch's
// gradient returns them; the phase names what the transfer is the gradient of.
TaskPlace comm_place(const TaskPlace& at, ExpertPass pass, bool returning) {
  const bool backward = pass == ExpertPass::backward;
  const PhaseTag bring = backward ? PhaseTag::ep_combine : PhaseTag::ep_dispatch;
  const PhaseTag give = backward ? PhaseTag::ep_dispatch : PhaseTag::ep_combine;
  return {at.rank, StreamKind::comm_ep, returning ? give : bring, at.microbatch, at.layer};
}

// Expert TP (Megatron-Core's all-to-all dispatcher with expert_tensor_parallel_size > 1): the
// rows gathered over the ETP group before the GEMMs and reduce-scattered after, both ways.
CollectivePurpose etp_purpose(ExpertPass pass) {
  return pass == ExpertPass::forward     ? CollectivePurpose::etp_forward
         : pass == ExpertPass::recompute ? CollectivePurpose::etp_recompute
                                         : CollectivePurpose::etp_backward;
}

// The collective the plan's EP transport runs toward the experts or back (all-to-all, or the
// all-gather dispatcher's all-gather and reduce-scatter).
CollectiveKind ep_kind(const ParallelPlan& plan, bool toward_experts) {
  EpTransferRequest direction;
  direction.toward_experts = toward_experts;
  return ep_collective_request(plan.ep_transport, direction).kind;
}

}  // namespace

TaskId experts_in(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                  const RoutedExperts& experts, TaskId ready) {
  const TaskPlace comm = comm_place(at, pass, false);
  TaskId in = ready;
  if (plan.ep > 1) {
    const double bytes = pass == ExpertPass::backward ? experts.a2a_bytes : experts.dispatch_bytes;
    in = emit.collective(comm, {Communicator::ep_mp, purposes(pass).before, ep_kind(plan, true), bytes}, ready);
  }
  if (plan.etp > 1) {
    in = emit.collective(comm, {Communicator::etp, etp_purpose(pass), CollectiveKind::all_gather, experts.etp_bytes, 0},
                         in);
  }
  return in;
}

TaskId experts_compute(StepEmitter& emit, const TaskPlace& at, ExpertPass pass, const RoutedExperts& experts,
                       TaskId ready) {
  return emit.kernel({at.rank, StreamKind::compute, at.phase, at.microbatch, at.layer}, TaskKind::compute,
                     experts.work_s, pass == ExpertPass::backward ? "routed experts backward" : "routed experts",
                     ready);
}

TaskId experts_out(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                   const RoutedExperts& experts, TaskId ready) {
  const TaskPlace back = comm_place(at, pass, true);
  TaskId out = ready;
  if (plan.etp > 1) {
    out = emit.collective(
        back, {Communicator::etp, etp_purpose(pass), CollectiveKind::reduce_scatter, experts.etp_bytes, 1}, out);
  }
  if (plan.ep > 1) {
    out = emit.collective(back, {Communicator::ep_mp, purposes(pass).after, ep_kind(plan, false), experts.a2a_bytes},
                          out);
  }
  return out;
}

}  // namespace moesim
