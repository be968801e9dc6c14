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

}  // namespace

TaskId routed_experts(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                      const RoutedExperts& experts, TaskId ready) {
  const bool backward = pass == ExpertPass::backward;
  const A2aPair a2a = purposes(pass);
  // Backward runs the pair in reverse: the combine's gradient brings the rows, the dispatch's
  // gradient returns them; the phase names what the transfer is the gradient of.
  const PhaseTag first = backward ? PhaseTag::ep_combine : PhaseTag::ep_dispatch;
  const PhaseTag second = backward ? PhaseTag::ep_dispatch : PhaseTag::ep_combine;
  const TaskPlace comm{at.rank, StreamKind::comm_ep, first, at.microbatch, at.layer};
  TaskId in = ready;
  if (plan.ep > 1) {
    const double bytes = backward ? experts.a2a_bytes : experts.dispatch_bytes;
    in = emit.collective(comm, {Communicator::ep_mp, a2a.before, CollectiveKind::all_to_all, bytes}, ready);
  }
  // Expert TP (Megatron-Core's all-to-all dispatcher with expert_tensor_parallel_size > 1): the
  // rows gathered over the ETP group before the GEMMs and reduce-scattered after, both ways.
  const CollectivePurpose etp = pass == ExpertPass::forward     ? CollectivePurpose::etp_forward
                                : pass == ExpertPass::recompute ? CollectivePurpose::etp_recompute
                                                                : CollectivePurpose::etp_backward;
  if (plan.etp > 1)
    in = emit.collective(comm, {Communicator::etp, etp, CollectiveKind::all_gather, experts.etp_bytes, 0}, in);
  TaskId out = emit.kernel({at.rank, StreamKind::compute, at.phase, at.microbatch, at.layer}, TaskKind::compute,
                           experts.work_s, backward ? "routed experts backward" : "routed experts", in);
  if (plan.etp > 1) {
    TaskPlace back = comm;
    back.phase = second;
    out = emit.collective(back, {Communicator::etp, etp, CollectiveKind::reduce_scatter, experts.etp_bytes, 1}, out);
  }
  if (plan.ep > 1) {
    TaskPlace back = comm;
    back.phase = second;
    out = emit.collective(back, {Communicator::ep_mp, a2a.after, CollectiveKind::all_to_all, experts.a2a_bytes}, out);
  }
  return out;
}

}  // namespace moesim
