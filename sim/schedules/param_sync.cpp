#include "sim/schedules/param_sync.hpp"

#include <stdexcept>

namespace moesim {

TaskId ParamSync::before_unit(const UnitVisit&, TaskId ready) { return ready; }

void ParamSync::after_unit_backward(std::int64_t, std::int32_t, TaskId) {}

const Registry<ParamSyncModel>& param_sync_models() {
  static const auto registry = [] {
    Registry<ParamSyncModel> r("parameter-sync strategy");
    r.add(make_fsdp2_full_reshard());
    r.add(make_ddp_distributed_optimizer());
    return r;
  }();
  return registry;
}

const ParamSyncModel& param_sync_for(Design design) {
  for (const auto& entry : param_sync_models().entries()) {
    const ParamSyncModel& model = param_sync_models().get(entry.name);
    if (model.design() == design) return model;
  }
  throw std::logic_error("no parameter-sync strategy for design " + std::string(name_of(design)));
}

TaskId grad_norm(const RankContext& rank, const std::vector<TaskId>& reductions) {
  constexpr double kNormBytes = 2 * bytes_of(DType::fp32);  // the squared-norm partial sums, FP32
  const TaskId norm = rank.emit.collective(
      {rank.rank, StreamKind::comm_dp, PhaseTag::optimizer, -1, -1},
      {Communicator::dp, CollectivePurpose::grad_norm, CollectiveKind::all_reduce, kNormBytes}, kNoTask);
  for (const TaskId t : reductions) rank.emit.depend(t, norm);
  return norm;
}

double update_bytes_per_element(const OptimizerSpec& optimizer) {
  return bytes_of(DType::fp32) + 2 * bytes_of(optimizer.main_weight_dtype) +
         2 * optimizer.states() * bytes_of(optimizer.state_dtype);
}

}  // namespace moesim
