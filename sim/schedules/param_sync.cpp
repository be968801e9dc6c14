#include "sim/schedules/param_sync.hpp"

#include <stdexcept>

#include "models/plan/designs/design.hpp"

namespace moesim {

void ParamSync::start_of_step() {}

TaskId ParamSync::before_unit(const UnitVisit&, TaskId ready) { return ready; }

void ParamSync::after_unit_backward(std::int64_t, std::int32_t, TaskId) {}

TaskId ParamSync::between_tries() {
  throw std::logic_error("a rerun step under a design whose strategy does not place one (validate_plan refuses it)");
}

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
  for (const LocalTensor& lt : s.tensors) {
    if (lt.tensor->layer == -1 && s.stage != first) continue;
    out.numel[lt.tensor->layer] += lt.local_numel;
    if (lt.tensor->cls == TensorClass::routed_expert) out.expert_numel[lt.tensor->layer] += lt.local_numel;
  }
  return out;
}

ComputeShare unit_shares(const SyncStage& s, const StageUnits& units,
                         const std::function<UnitShare(std::int64_t)>& of) {
  const std::vector<LayerPlace> places = layer_places(s.plan, s.arch);  // embedding, layers, head
  const auto chunks = static_cast<std::size_t>(s.plan.model_chunks());
  ComputeShare out{0, std::vector<double>(chunks), std::vector<double>(chunks), std::vector<double>(chunks), {}};
  for (std::int64_t unit = -1; unit <= s.arch.num_layers; ++unit) {
    const LayerPlace& at = places[static_cast<std::size_t>(unit + 1)];
    if (at.stage != s.stage || !(units.numel[unit] > 0)) continue;  // an empty unit's kernels: left out
    const UnitShare x = of(unit);
    const auto c = static_cast<std::size_t>(at.chunk);
    out.forward[c] += x.forward;
    out.backward[c] += x.backward;
    out.gradients[c] += x.gradients;
  }
  return out;
}

namespace {
constexpr double kNormBytes = 2 * bytes_of(DType::fp32);  // the squared-norm partial sums, FP32
constexpr double kLossBytes = bytes_of(DType::fp32);      // one FP32 scalar
}  // namespace

TaskId clip_gradients(const RankContext& rank, double elements, const std::vector<TaskId>& reductions) {
  const double cell = bytes_of(rank.plan.precision.grad_accum);
  const TaskPlace at{rank.rank, StreamKind::compute, PhaseTag::optimizer, -1, -1};
  const TaskId norms = rank.emit.memory_kernel(at, elements * cell, MemoryKernel::elementwise, "gradient norms");
  for (const TaskId t : reductions) rank.emit.depend(t, norms);
  const TaskId total = rank.emit.collective(
      {rank.rank, StreamKind::comm_dp, PhaseTag::optimizer, -1, -1},
      {Communicator::dp, CollectivePurpose::grad_norm, CollectiveKind::all_reduce, kNormBytes}, norms);
  return rank.emit.memory_kernel(at, 2 * elements * cell, MemoryKernel::elementwise, "clip gradients", total);
}

TaskId loss_all_reduce(const RankContext& rank) {
  return rank.emit.collective({rank.rank, StreamKind::comm_dp, PhaseTag::optimizer, -1, -1},
                              {Communicator::dp, CollectivePurpose::loss, CollectiveKind::all_reduce, kLossBytes},
                              kNoTask);
}

double solo_collective_s(const SyncStage& s, CollectiveKind kind, double bytes, Communicator communicator) {
  return s.costs.collective(collective_request(kind, bytes, communicator_shape(s.plan, communicator))).time_s;
}

double loss_all_reduce_s(const SyncStage& s) {
  return solo_collective_s(s, CollectiveKind::all_reduce, kLossBytes, Communicator::dp);
}

double clip_after_reductions_s(const SyncStage& s, double elements) {
  return solo_collective_s(s, CollectiveKind::all_reduce, kNormBytes, Communicator::dp) +
         s.costs.memory(2 * elements * bytes_of(s.plan.precision.grad_accum), MemoryKernel::elementwise);
}

}  // namespace moesim
