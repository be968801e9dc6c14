#include "reports/step_report.hpp"
#include "models/hw/profile_provenance.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "models/common/units.hpp"
#include "reports/stack_report.hpp"
#include "reports/text_format.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

// How many ledger items an out-of-memory listing names: enough to hold most of the peak on every
// bundled plan (weights, grads, optimizer states, activations, the phase's transients), few
// enough to read at a glance.
constexpr std::size_t kTopContributors = 6;

std::string coll_name(std::size_t k) { return std::string(name_of(static_cast<CollectiveKind>(k))); }

nlohmann::json busy_map(const std::array<double, kTaskKinds>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t k = 0; k < kTaskKinds; ++k) out[name_of(static_cast<TaskKind>(k))] = values[k];
  return out;
}

nlohmann::json kind_map(const std::array<double, kTaskKinds>& values, double idle) {
  nlohmann::json out = busy_map(values);
  out["idle"] = idle;
  return out;
}

nlohmann::json phase_map(const std::array<double, kPhases>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t p = 0; p < kPhases; ++p) {
    // Written only where the step has them (a rerun, a paged stash), so that reports of the others
    // stay as they were.
    const auto phase = static_cast<PhaseTag>(p);
    if ((phase == PhaseTag::rerun || phase == PhaseTag::paged_stash) && values[p] == 0) continue;
    out[name_of(static_cast<PhaseTag>(p))] = values[p];
  }
  return out;
}

// The worst stage's peak allocation by ledger class (persistent state plus the peak phase's
// working set; the values sum to peak_allocated_GiB), for the stacked memory bars (seed Fig. 9).
nlohmann::json memory_by_class(const StageLedger& worst) {
  nlohmann::json out = nlohmann::json::object();
  const auto add = [&](const std::vector<LedgerItem>& items, const char* kind) {
    for (const auto& i : items) {
      auto& entry = out[std::string(name_of(i.cls))];
      if (entry.is_null()) entry = {{"kind", kind}, {"GiB", 0.0}};
      entry["GiB"] = entry["GiB"].get<double>() + i.bytes / kGiB;
    }
  };
  add(worst.persistent, "persistent");
  for (const auto& ph : worst.phases) {
    if (ph.phase == worst.peak_phase) add(ph.items, "working");
  }
  return out;
}

std::vector<double> in_flight_equivalents(const MemoryLedger& ledger) {
  std::vector<double> out;
  for (const auto& s : ledger.stages) out.push_back(s.in_flight_microbatches);
  return out;
}

// Each kind of task's time on the critical rank's step (exposed, compute first) beside its busy
// time, and what ran hidden under other work; then communication's three numbers in one line.
std::string kind_split(const StepResult& r) {
  TextTable table({{"  by kind of task", Align::left},
                   {"exposed ms", Align::right},
                   {"busy ms", Align::right},
                   {"overlapped ms", Align::right}});
  for (std::size_t k = 0; k < kTaskKinds; ++k) {
    // Host copies appear only in steps that offload activations.
    if (static_cast<TaskKind>(k) == TaskKind::copy && r.busy_by_kind_s[k] == 0) continue;
    table.add({"  " + std::string(name_of(static_cast<TaskKind>(k))), fmt("%.2f", r.exposed_by_kind_s[k] * 1e3),
               fmt("%.2f", r.busy_by_kind_s[k] * 1e3),
               fmt("%.2f", (r.busy_by_kind_s[k] - r.exposed_by_kind_s[k]) * 1e3)});
  }
  table.add({"  idle", fmt("%.2f", r.idle_s * 1e3)});
  double busy = 0, exposed = 0;
  for (const TaskKind k : {TaskKind::collective, TaskKind::p2p}) {
    busy += r.busy_by_kind_s[static_cast<std::size_t>(k)];
    exposed += r.exposed_by_kind_s[static_cast<std::size_t>(k)];
  }
  std::string out = table.render() + "communication " + fmt("%.2f ms", busy * 1e3) +
                    " busy: " + fmt("%.2f ms", exposed * 1e3) + " exposed, " + fmt("%.2f ms", (busy - exposed) * 1e3) +
                    " hidden under other work";
  if (busy > 0) out += fmt(" (%.1f%% hidden)", 100 * (busy - exposed) / busy);
  return out + "\n";
}

// What fills an out-of-memory stage at its peak, largest first: its persistent state and the
// peak phase's working set, then the allocator's and the runtime's shares of the device total.
std::string top_memory(const MemoryLedger& ledger) {
  const StageLedger& worst = ledger.stages[ledger.worst_stage];
  std::vector<std::pair<const LedgerItem*, const char*>> items;
  for (const auto& i : worst.persistent) items.emplace_back(&i, "persistent");
  for (const auto& ph : worst.phases) {
    if (ph.phase != worst.peak_phase) continue;
    for (const auto& i : ph.items) items.emplace_back(&i, "working");
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.first->bytes > b.first->bytes; });
  std::ostringstream os;
  os << "         largest contributors on stage " << ledger.worst_stage << " at the peak:\n";
  const std::size_t shown = std::min<std::size_t>(items.size(), kTopContributors);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& [item, kind] = items[i];
    os << "         " << fmt("%9.2f GiB", item->bytes / kGiB) << "  " << item->name << " (" << kind << ", "
       << name_of(item->cls) << ")\n";
  }
  os << "         " << fmt("%9.2f GiB", (worst.peak_reserved - worst.peak_allocated) / kGiB)
     << "  allocator fragmentation (reserved - allocated)\n";
  os << "         " << fmt("%9.2f GiB", worst.runtime_reserves / kGiB) << "  runtime reserves\n";
  return os.str();
}

}  // namespace

nlohmann::json cost_models_json(const CostModelChoice& c) {
  return {{"gemm", c.gemm},     {"grouped_gemm", c.grouped_gemm}, {"attention", c.attention},
          {"memory", c.memory}, {"collective", c.collective},     {"resource_sharing", c.resource_sharing}};
}

std::string cost_models_text(const CostModelChoice& c) {
  return "gemm " + c.gemm + ", grouped_gemm " + c.grouped_gemm + ", attention " + c.attention + ", memory " + c.memory +
         ", collective " + c.collective + ", resource_sharing " + c.resource_sharing;
}

namespace {
nlohmann::json routing_json(const StepResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : r.routing) {
    out.push_back({{"layer", l.layer}, {"imbalance", l.imbalance}, {"dropped_fraction", l.dropped_fraction}});
  }
  return out;
}

// The per-layer imbalance in one line: its range, the worst layer, the rows dropped.
std::string routing_line(const Scenario& sc, const StepResult& r) {
  const auto worst = std::max_element(r.routing.begin(), r.routing.end(),
                                      [](const auto& a, const auto& b) { return a.imbalance < b.imbalance; });
  const auto best = std::min_element(r.routing.begin(), r.routing.end(),
                                     [](const auto& a, const auto& b) { return a.imbalance < b.imbalance; });
  std::string out = "routing  ";
  out += name_of(sc.plan.routing.kind);
  out += ": the most-loaded EP rank carries ";
  out += fmt("%.2f", best->imbalance);
  out += "-";
  out += fmt("%.2f", worst->imbalance);
  out += "x the even share per MoE layer (worst: layer ";
  out += std::to_string(worst->layer);
  out += "); ";
  out += fmt("%.1f", 100 * r.dropped_fraction);
  out += "% of routed rows dropped\n";
  return out;
}

nlohmann::json linear_formats(const PrecisionSpec& p) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t c = 0; c < kLinearClasses; ++c)
    out[std::string(name_of(static_cast<LinearClass>(c)))] = name_of(p.linears[c]);
  return out;
}

std::string low_precision_line(const Scenario& sc, const StepResult& r) {
  std::string out = "formats ";
  const auto& precision = sc.plan.precision;
  for (std::size_t c = 0; c < kLinearClasses; ++c) {
    if (precision.linears[c] == GemmPrecision::bf16) continue;
    out += name_of(static_cast<LinearClass>(c));
    out += ' ';
    out += name_of(precision.linears[c]);
    out += ", ";
  }
  out += precision.weight_caches ? "weight caches; " : "weights quantized on use; ";
  out += "MFU is on the BF16 peak";
  if (r.mfu_fp8_peak > 0) {
    out += " (";
    out += fmt("%.1f", 100 * r.mfu_fp8_peak);
    out += "% of the ";
    out += fmt("%.0f", sc.hardware.gpu.peak_fp8_dense_TFLOPs->value);
    out += " TFLOP/s FP8 peak)";
  }
  out += "\n";
  return out;
}

}  // namespace

nlohmann::json step_headline_json(const Scenario& sc, const StepResult& r) {
  const auto& worst = r.ledger.stages[r.ledger.worst_stage];
  return {{"design", r.design},
          {"hardware", sc.hardware.name},
          {"world", r.world},
          {"params_total", r.params_total},
          {"params_active", r.params_active},
          {"flops_per_token", r.flops.total},
          {"flop_convention", r.flops.convention},
          {"microbatches", r.microbatches},
          {"global_batch_tokens", r.global_tokens},
          {"step_time_s", r.step_time_s},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
          {"mfu", r.mfu},
          {"in_flight_microbatches", in_flight_equivalents(r.ledger)},
          {"peak_allocated_GiB", worst.peak_allocated / kGiB},
          {"peak_reserved_GiB", worst.peak_reserved / kGiB},
          {"device_total_GiB", worst.device_total / kGiB},
          {"capacity_GiB", worst.capacity / kGiB},
          {"oom", r.ledger.oom},
          {"breaking_phase", name_of(worst.peak_phase)}};
}

nlohmann::json step_json(const Scenario& sc, const StepResult& r) {
  const auto& worst = r.ledger.stages[r.ledger.worst_stage];
  nlohmann::json bytes = nlohmann::json::object();
  for (std::size_t k = 0; k < kCollectiveKinds; ++k) {
    if (r.bytes_per_rank[k][0] + r.bytes_per_rank[k][1] == 0) continue;
    bytes[coll_name(k)] = {{"nvlink", r.bytes_per_rank[k][0]}, {"nic", r.bytes_per_rank[k][1]}};
    // Written only when a PXN relay ran, so that reports without one stay as they were.
    if (r.nvlink_relay_bytes_per_rank[k] > 0) bytes[coll_name(k)]["nvlink_relay"] = r.nvlink_relay_bytes_per_rank[k];
  }
  // Keys are kept sorted, so the headline's fields land where they always did.
  nlohmann::json j = step_headline_json(sc, r);
  j["schema"] = "moesim-step/1";
  j["scenario"] = sc.name;
  j["cost_models"] = cost_models_json(sc.cost_models);
  j["ep_transport"] = sc.plan.ep > 1 ? std::string(name_of(sc.plan.ep_transport)) : std::string("none");
  j["mfu_peak_TFLOPs"] = sc.hardware.gpu.peak_bf16_TFLOPs.value;
  j["linear_formats"] = linear_formats(sc.plan.precision);
  j["mfu_fp8_peak"] = r.mfu_fp8_peak;
  j["routing"] = routing_json(r);
  j["exposed_s"] = phase_map(r.exposed_s);
  j["idle_s"] = r.idle_s;
  j["time_by_kind_s"] = kind_map(r.exposed_by_kind_s, r.idle_s);
  j["busy_by_kind_s"] = busy_map(r.busy_by_kind_s);
  j["critical_path_s"] = phase_map(r.critical_path_s);
  j["bytes_per_rank"] = std::move(bytes);
  j["in_flight_chunks"] = r.in_flight;
  j["in_flight_source"] = r.ledger.in_flight_source;
  j["dropped_fraction"] = r.dropped_fraction;
  if (!r.rerun.empty()) j["rerun"] = r.rerun;  // written only for a step that reruns
  j["tasks"] = r.tasks;
  j["simulated_ranks"] = r.simulated_ranks;
  j["memory_by_class"] = memory_by_class(worst);
  j["inputs"] = sc.resolved;
  // Written only when the plan names a stack, so that reports without one stay as they were.
  if (!sc.stack.name.empty()) j["stack"] = stack_json(sc.stack);
  if (const auto& p = sc.hardware.power_limit) {  // written only under a limit below the default
    j["power_limit"] = {{"limit_W", p->limit_W}, {"board_W", p->board_W}, {"factor", p->factor}, {"source", p->source}};
  }
  return j;
}

// Which linears run in an FP8 format, and MFU's two views: the BF16 peak (the Olmo-core report's
// convention, which the step line uses) and the FP8 peak.
// Which of the kernels that dominate the step rest on assumed rates in the profile (empty when
// none): the prediction carries them.
std::string kernel_basis_line(const Scenario& sc) {
  const auto assumed = assumed_kernel_classes(sc.hardware, sc.arch.moe.has_value());
  if (assumed.empty()) return "";
  std::string classes;
  for (std::size_t i = 0; i < assumed.size(); ++i)
    classes += (i == 0 ? "" : i + 1 == assumed.size() ? " and " : ", ") + assumed[i];
  return "basis    assumed in " + sc.hardware.name + ", not measured: " + classes + " (moesim profile show " +
         sc.hardware.name + ")\n";
}

// The power limit the GPUs run under, where it is below the board's default (empty otherwise).
std::string power_line(const HardwareProfile& hw) {
  if (!hw.power_limit) return "";
  const PowerLimit& p = *hw.power_limit;
  return "power    limited to " + fmt("%.0f", p.limit_W) + " W of the board's " + fmt("%.0f", p.board_W) +
         " W: GEMM and attention at " + fmt("%.3f", p.factor) +
         " x the profile's rates, HBM and links unchanged (compute.gemm_TFLOPs_by_power_limit)\n";
}

std::string step_table(const Scenario& sc, const StepResult& r) {
  std::ostringstream os;
  const auto& worst = r.ledger.stages[r.ledger.worst_stage];
  os << "scenario " << sc.name << "  (design " << r.design;
  if (sc.plan.ep > 1) os << ", EP transport " << name_of(sc.plan.ep_transport);
  if (sc.plan.ep > 1 && sc.plan.ep_pxn != PxnChoice::profile) os << ", PXN " << name_of(sc.plan.ep_pxn);
  os << ", hardware " << sc.hardware.name << ", " << r.world << " GPUs)\n";
  os << stack_line(sc.stack);
  os << power_line(sc.hardware);
  os << "model    " << fmt("%.2f", r.params_total / 1e9) << "B total, " << fmt("%.2f", r.params_active / 1e9)
     << "B active, " << fmt("%.3f", r.flops.total / 1e9) << " GFLOP/token (" << r.flops.convention << ")\n";
  os << "step     " << fmt("%.1f", r.step_time_s * 1e3) << " ms for " << fmt("%.0f", r.global_tokens)
     << " tokens (m=" << r.microbatches << "), " << fmt("%.0f", r.tokens_per_s_per_gpu) << " tokens/s/GPU, MFU "
     << fmt("%.1f", 100 * r.mfu) << "% of " << fmt("%.0f", sc.hardware.gpu.peak_bf16_TFLOPs.value) << " TFLOP/s\n";
  if (sc.plan.precision.any_low_precision()) os << low_precision_line(sc, r);
  os << kernel_basis_line(sc);
  if (!r.routing.empty()) os << routing_line(sc, r);
  if (!r.rerun.empty()) {
    os << "rerun    every step runs twice (Megatron-Core's sync-free MoE path retries in synced dropless mode): "
       << r.rerun << "; the first try is the rerun phase, memory the larger try's\n";
  }
  os << "time split on the critical rank (compute first, then exposed communication, then idle):\n";
  for (std::size_t p = 0; p < kPhases; ++p) {
    if (r.exposed_s[p] <= 0) continue;
    os << "  " << fmt("%10.2f ms", r.exposed_s[p] * 1e3) << "  " << fmt("%5.1f%%", 100 * r.exposed_s[p] / r.step_time_s)
       << "  " << name_of(static_cast<PhaseTag>(p)) << "\n";
  }
  if (r.idle_s > 0)
    os << "  " << fmt("%10.2f ms", r.idle_s * 1e3) << "  " << fmt("%5.1f%%", 100 * r.idle_s / r.step_time_s)
       << "  idle / bubble\n";
  os << kind_split(r);
  os << "bytes sent per rank per step (NVLink / NIC):\n";
  for (std::size_t k = 0; k < kCollectiveKinds; ++k) {
    if (r.bytes_per_rank[k][0] + r.bytes_per_rank[k][1] == 0) continue;
    os << "  " << fmt("%10.2f GiB", r.bytes_per_rank[k][0] / kGiB) << " / "
       << fmt("%8.2f GiB", r.bytes_per_rank[k][1] / kGiB) << "  " << coll_name(k);
    if (r.nvlink_relay_bytes_per_rank[k] > 0) {
      os << " (NVLink includes " << fmt("%.2f GiB", r.nvlink_relay_bytes_per_rank[k] / kGiB) << " PXN relay)";
    }
    os << "\n";
  }
  os << "memory   peak allocated " << fmt("%.1f", worst.peak_allocated / kGiB) << " GiB (" << name_of(worst.peak_phase)
     << "), device " << fmt("%.1f", worst.device_total / kGiB) << " of " << fmt("%.1f", worst.capacity / kGiB)
     << " GiB: " << (r.ledger.oom ? "OUT OF MEMORY" : "fits");
  if (!r.ledger.oom && worst.device_total >= worst.capacity) {
    os << " (at the device's limit the allocator releases cached segments; " << fmt("%.1f", worst.headroom / kGiB)
       << " GiB left counting them)";
  }
  os << "\n";
  if (r.ledger.oom) os << top_memory(r.ledger);
  os << "         in flight per stage (microbatch equivalents):";
  for (const double n : in_flight_equivalents(r.ledger)) os << " " << fmt("%g", n);
  os << ", from " << r.ledger.in_flight_source << "\n";
  os << "replay   " << r.tasks << " tasks on " << r.simulated_ranks
     << " simulated rank(s); models: " << cost_models_text(sc.cost_models) << "\n";
  return os.str();
}

}  // namespace moesim
