#include "sim/schedules/param_sync.hpp"

#include "models/plan/designs/design.hpp"

namespace moesim {

void ParamSync::start_of_step() {}

TaskId ParamSync::before_unit(const UnitVisit&, TaskId ready) { return ready; }

void ParamSync::after_unit_backward(std::int64_t, std::int32_t, TaskId) {}

const Registry<ParamSyncModel>& param_sync_models() {
  static const auto registry = [] {
    Registry<ParamSyncModel> r("parameter-sync strategy");
    r.add(make_fsdp2_full_reshard());
    r.add(make_fsdp2_shard_grad_op());
    r.add(make_fsdp1_full_shard());
    r.add(make_zero2());
    r.add(make_ddp_distributed_optimizer());
    return r;
  }();
  return registry;
}

const ParamSyncModel& param_sync_for(const ParallelPlan& plan) {
  return param_sync_models().get(design_of(plan).param_sync());
}

StageUnits stage_units(const SyncStage& s) {
  StageUnits out{UnitTable<double>(s.arch.num_layers), UnitTable<double>(s.arch.num_layers)};
  const std::int64_t first = layer_places(s.plan, s.arch).front().stage;
  for (const LocalTensor& lt : stage_tensors(s.inventory, s.arch, s.plan, s.stage)) {
    if (lt.tensor->layer == -1 && s.stage != first) continue;
    out.numel[lt.tensor->layer] += lt.local_numel;
    if (lt.tensor->cls == TensorClass::routed_expert) out.expert_numel[lt.tensor->layer] += lt.local_numel;
  }
  return out;
}

TaskId clip_gradients(const RankContext& rank, double elements, const std::vector<TaskId>& reductions) {
  const double cell = bytes_of(rank.plan.precision.grad_accum);
  const TaskPlace at{rank.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1};
  const TaskId norms = rank.emit.memory_kernel(at, elements * cell, MemoryKernel::elementwise, "gradient norms");
  for (const TaskId t : reductions) rank.emit.depend(t, norms);
  constexpr double kNormBytes = 2 * bytes_of(DType::fp32);  // the squared-norm partial sums, FP32
  const TaskId total = rank.emit.collective(
      {rank.rank, StreamKind::comm_dp, PhaseTag::optimizer, -1, -1},
      {Communicator::dp, CollectivePurpose::grad_norm, CollectiveKind::all_reduce, kNormBytes}, norms);
  return rank.emit.memory_kernel(at, 2 * elements * cell, MemoryKernel::elementwise, "clip gradients", total);
}

TaskId loss_all_reduce(const RankContext& rank) {
  constexpr double kLossBytes = bytes_of(DType::fp32);  // one FP32 scalar
  return rank.emit.collective({rank.rank, StreamKind::comm_dp, PhaseTag::optimizer, -1, -1},
                              {Communicator::dp, CollectivePurpose::loss, CollectiveKind::all_reduce, kLossBytes},
                              kNoTask);
}

}  // namespace moesim
