#include "models/memory/ledger.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/common/units.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

std::string_view name_of(MemClass c) {
  switch (c) {
    case MemClass::compute_weights: return "compute_weights";
    case MemClass::grad_buffers: return "grad_buffers";
    case MemClass::main_weights: return "main_weights";
    case MemClass::optimizer_states: return "optimizer_states";
    case MemClass::activations: return "activations";
    case MemClass::activation_grads: return "activation_grads";
    case MemClass::logits_loss: return "logits_loss";
    case MemClass::weight_grad_transient: return "weight_grad_transient";
    case MemClass::fsdp_materialized: return "fsdp_materialized";
    case MemClass::fsdp_grad_unsharded: return "fsdp_grad_unsharded";
    case MemClass::ep_comm_buffers: return "ep_comm_buffers";
    case MemClass::optimizer_transients: return "optimizer_transients";
    case MemClass::weight_rebuild: return "weight_rebuild";
    case MemClass::quantized_operands: return "quantized_operands";
  }
  return "?";
}

std::string_view name_of(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::grad_sync: return "grad_sync";
    case Phase::optimizer_step: return "optimizer_step";
    case Phase::weight_rebuild: return "weight_rebuild";
  }
  return "?";
}

namespace {

double sum_bytes(const std::vector<LedgerItem>& items) {
  double s = 0;
  for (const auto& i : items) s += i.bytes;
  return s;
}

StageLedger stage_ledger(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan,
                         const HardwareProfile& hw, std::int64_t stage, const std::vector<std::int64_t>& held) {
  StageLedger s;
  s.stage = stage;
  s.layers = stage_layer_counts(plan, arch)[static_cast<std::size_t>(stage)];
  const auto tensors = stage_tensors(inv, arch, plan, stage);
  for (const auto& lt : tensors) s.local_params += lt.local_numel;
  s.in_flight_chunks = held;
  for (const std::int64_t n : held) s.in_flight_microbatches += dbl(n);
  s.in_flight_microbatches /= dbl(std::max<std::size_t>(held.size(), 1));
  s.persistent = persistent_state(tensors, plan, s.optimizer);
  s.persistent_bytes = sum_bytes(s.persistent);
  s.phases = working_memory(arch, plan, tensors, stage, held);

  const PhaseSet* peak = &s.phases.front();
  for (const auto& p : s.phases) {
    if (p.bytes() > peak->bytes()) peak = &p;
  }
  s.peak_phase = peak->phase;
  for (const auto& i : peak->items)
    if (i.cls == MemClass::activations) s.activation_bytes += i.bytes;
  s.peak_allocated = s.persistent_bytes + peak->bytes();
  // Fragmentation: the share of reserved memory the caching allocator cannot hand out.
  s.peak_reserved = s.peak_allocated / (1.0 - hw.memory.fragmentation_fraction.value);
  s.runtime_reserves =
      (hw.memory.cuda_context_GiB.value + hw.memory.nccl_buffers_GiB.value + hw.memory.library_workspace_GiB.value) *
      kGiB;
  s.device_total = s.peak_reserved + s.runtime_reserves;
  s.capacity = hw.memory.usable_capacity_GiB.value * kGiB;
  s.headroom = s.capacity - s.device_total;
  s.oom = s.headroom < 0;

  s.top_contributors = s.persistent;
  s.top_contributors.insert(s.top_contributors.end(), peak->items.begin(), peak->items.end());
  std::stable_sort(s.top_contributors.begin(), s.top_contributors.end(),
                   [](const LedgerItem& x, const LedgerItem& y) { return x.bytes > y.bytes; });
  constexpr std::size_t kTop = 5;  // enough to name what breaks the budget, short enough to read
  if (s.top_contributors.size() > kTop) s.top_contributors.resize(kTop);
  return s;
}

}  // namespace

MemoryLedger build_ledger(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan,
                          const HardwareProfile& hw, const InFlight& in_flight) {
  if (in_flight.chunks.size() != static_cast<std::size_t>(plan.pp)) {
    throw std::logic_error("build_ledger: in-flight counts for " + std::to_string(in_flight.chunks.size()) +
                           " stages, the plan has " + std::to_string(plan.pp));
  }
  MemoryLedger ledger;
  ledger.in_flight_source = in_flight.source;
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    ledger.stages.push_back(
        stage_ledger(arch, inv, plan, hw, stage, in_flight.chunks[static_cast<std::size_t>(stage)]));
  }
  for (std::size_t i = 0; i < ledger.stages.size(); ++i) {
    if (ledger.stages[i].headroom < ledger.stages[ledger.worst_stage].headroom) ledger.worst_stage = i;
    ledger.oom = ledger.oom || ledger.stages[i].oom;
  }
  return ledger;
}

}  // namespace moesim
