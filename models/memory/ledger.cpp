#include "models/memory/ledger.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "models/common/units.hpp"
#include "models/memory/ledger_structure.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/rank_layout.hpp"
#include "models/plan/sync_free.hpp"

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
    case MemClass::cp_comm_buffers: return "cp_comm_buffers";
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

// Reserved memory from allocated memory (plan.allocator): the caching-allocator replay adds its
// segment rounding and the free space it keeps to the ledger's allocated peak; the fixed rule
// divides by (1 - the profile's fragmentation fraction).
void allocator_view(StageLedger& s, const Architecture& arch, const ParallelPlan& plan, const HardwareProfile& hw,
                    const StageStructure& structure, const RoutedRows& routed, const std::vector<std::int64_t>& held,
                    const StageAllocationReplay& replay) {
  if (plan.allocator.model == AllocatorModel::fixed_fraction) {
    const double f = hw.memory.fragmentation_fraction.value;
    s.peak_reserved = s.reserved_required = s.peak_allocated / (1.0 - f);
    char text[64];
    std::snprintf(text, sizeof text, "allocated / (1 - fragmentation_fraction %.2f)", f);
    s.allocator_basis = text;
    return;
  }
  const double limit = hw.memory.usable_capacity_GiB.value * kGiB - s.runtime_reserves;
  if (s.peak_allocated > limit) {
    // The allocated peak alone is past what the allocator may reserve: no replay can fit it.
    s.peak_reserved = s.reserved_required = s.peak_allocated;
    s.allocator_oom = true;
    s.allocator_basis =
        "not replayed: the allocated peak alone exceeds the allocator's limit (usable capacity - runtime "
        "reserves)";
    return;
  }
  if (!replay) throw std::logic_error("build_ledger: the caching-allocator model needs the stage's allocation order");
  const AllocatorReplay r = replay({arch, plan, structure.tensors, s.persistent, structure.view, routed, s.stage, held,
                                    structure.update, std::max(limit, 1.0)});
  s.allocator_oom = r.out_of_memory;
  // The replay's overhead on the ledger's allocated peak, or the replay's own total where its
  // order holds more at once than the ledger's phases (whichever is larger).
  const double kept = r.kept_from_start + r.persistent_rounding;
  s.peak_reserved = std::max(s.peak_allocated + r.persistent_rounding + (r.working_reserved - r.working_allocated),
                             kept + r.working_reserved);
  s.reserved_required = std::max(s.peak_allocated + r.persistent_rounding + (r.working_required - r.working_allocated),
                                 kept + r.working_required);
  auto gib = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / kGiB);
    return std::string(text);
  };
  s.allocator_basis = "PyTorch caching allocator replayed over " + std::to_string(r.events) + " allocations and frees" +
                      (plan.allocator.expandable_segments ? " (expandable segments)" : "") + ": persistent rounding " +
                      gib(r.persistent_rounding) + "; the step's own tensors " + gib(r.working_allocated) +
                      " allocated at most, " + gib(r.working_reserved_roomy) + " reserved on a device with room, " +
                      gib(r.working_reserved) + " on this one, " + gib(r.working_required) +
                      " held at the worst reservation after releasing cached segments";
}

StageLedger stage_ledger(const Architecture& arch, const ParallelPlan& plan, const HardwareProfile& hw,
                         std::int64_t stage, const StageStructure& structure, const std::vector<std::int64_t>& held,
                         const StageAllocationReplay& replay) {
  const std::vector<LocalTensor>& tensors = structure.tensors;
  const StageView& view = structure.view;
  StageLedger s;
  s.stage = stage;
  s.layers = stage_layer_counts(plan, arch)[static_cast<std::size_t>(stage)];
  for (const auto& lt : tensors) s.local_params += lt.local_numel;
  s.in_flight_chunks = held;
  for (const std::int64_t n : held) s.in_flight_microbatches += dbl(n);
  s.in_flight_microbatches /= dbl(std::max<std::size_t>(held.size(), 1));
  s.persistent = structure.persistent;
  s.optimizer = structure.optimizer;
  s.persistent_bytes = sum_bytes(s.persistent);
  const RoutedRows routed = stage_routed_rows(arch, plan, view);  // once: random routing samples
  s.phases = working_memory(arch, plan, view, routed, structure.update, held);

  const PhaseSet* peak = &s.phases.front();
  for (const auto& p : s.phases) {
    if (p.bytes() > peak->bytes()) peak = &p;
  }
  s.peak_phase = peak->phase;
  for (const auto& i : peak->items)
    if (i.cls == MemClass::activations) s.activation_bytes += i.bytes;
  s.peak_allocated = s.persistent_bytes + peak->bytes();
  s.runtime_reserves =
      (hw.memory.cuda_context_GiB.value + hw.memory.nccl_buffers_GiB.value + hw.memory.library_workspace_GiB.value) *
      kGiB;
  allocator_view(s, arch, plan, hw, structure, routed, held, replay);
  s.capacity = hw.memory.usable_capacity_GiB.value * kGiB;
  // What the allocator could still take: cached segments it holds but can release are room.
  s.headroom = s.capacity - (s.reserved_required + s.runtime_reserves);
  s.oom = s.headroom < 0 || s.allocator_oom;
  // One number is printed against the capacity, and it agrees with the verdict: what the device
  // holds at the reserved high-water mark. An allocator that fits never reserves past the device:
  // at its limit it releases cached segments (c10 CUDACachingAllocator release_cached_blocks) and
  // keeps only what reserved_required counts, so a fitting stage's reserved peak is capped there.
  if (!s.oom) s.peak_reserved = std::min(s.peak_reserved, s.capacity - s.runtime_reserves);
  s.device_total = std::max(s.peak_reserved, s.oom ? s.reserved_required : 0.0) + s.runtime_reserves;

  // The largest items, persistent first where sizes tie; sorted by pointer, only the kept copied.
  std::vector<const LedgerItem*> items;
  for (const auto& i : s.persistent) items.push_back(&i);
  for (const auto& i : peak->items) items.push_back(&i);
  std::stable_sort(items.begin(), items.end(),
                   [](const LedgerItem* x, const LedgerItem* y) { return x->bytes > y->bytes; });
  constexpr std::size_t kTop = 5;  // enough to name what breaks the budget, short enough to read
  if (items.size() > kTop) items.resize(kTop);
  for (const LedgerItem* i : items) s.top_contributors.push_back(*i);
  return s;
}

}  // namespace

MemoryLedger build_ledger(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan,
                          const HardwareProfile& hw, const InFlight& in_flight) {
  return build_ledger(arch, plan, hw, in_flight, ledger_structure(arch, inv, plan));
}

MemoryLedger build_ledger(const Architecture& arch, const ParallelPlan& plan, const HardwareProfile& hw,
                          const InFlight& in_flight, const LedgerStructure& structure) {
  const auto stages = static_cast<std::size_t>(plan.pp);
  if (in_flight.chunks.size() != stages || structure.stages.size() != stages) {
    throw std::logic_error("build_ledger: in-flight counts for " + std::to_string(in_flight.chunks.size()) +
                           " stages and a structure of " + std::to_string(structure.stages.size()) + ", the plan has " +
                           std::to_string(plan.pp));
  }
  MemoryLedger ledger;
  ledger.in_flight_source = in_flight.source;
  // A step the sync-free MoE path reruns holds the first try's tensors (the budget, the stash),
  // frees them (prepare_for_rerun releases the stash buffers), then the synced dropless try's:
  // each stage's ledger is the try that needs more.
  const SyncFreeRerun rerun = sync_free_rerun(plan, arch);
  const std::optional<ParallelPlan> retry =
      rerun.reruns() ? std::optional<ParallelPlan>(synced_dropless(plan)) : std::nullopt;
  if (retry) ledger.rerun = rerun.why(plan);
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    const auto i = static_cast<std::size_t>(stage);
    StageLedger first = stage_ledger(arch, plan, hw, stage, structure.stages[i], in_flight.chunks[i], in_flight.replay);
    if (retry) {
      StageLedger second =
          stage_ledger(arch, *retry, hw, stage, structure.stages[i], in_flight.chunks[i], in_flight.replay);
      second.rerun_try = true;
      if (second.headroom < first.headroom) first = std::move(second);
    }
    ledger.stages.push_back(std::move(first));
  }
  for (std::size_t i = 0; i < ledger.stages.size(); ++i) {
    if (ledger.stages[i].headroom < ledger.stages[ledger.worst_stage].headroom) ledger.worst_stage = i;
    ledger.oom = ledger.oom || ledger.stages[i].oom;
  }
  return ledger;
}

}  // namespace moesim
