#include "reports/ledger_report.hpp"

#include <cstdio>
#include <sstream>

#include "models/common/units.hpp"
#include "models/plan/design_spec.hpp"
#include "reports/text_format.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

std::string gib(double bytes) { return fmt("%9.2f GiB", bytes / kGiB); }

nlohmann::json items_json(const std::vector<LedgerItem>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : items) {
    out.push_back(
        {{"name", i.name}, {"class", name_of(i.cls)}, {"bytes", i.bytes}, {"GiB", i.bytes / kGiB}, {"basis", i.basis}});
    if (i.by_format.empty()) continue;
    nlohmann::json formats = nlohmann::json::object();
    for (const auto& [format, bytes] : i.by_format) formats[format] = bytes;
    out.back()["bytes_by_format"] = formats;
  }
  return out;
}

nlohmann::json model_json(const LedgerInputs& in) {
  const auto& f = in.flops;
  nlohmann::json out = {{"name", in.scenario.arch.name},
                        {"params_total", in.inventory.params_total},
                        {"params_active", in.inventory.params_active},
                        {"tensors", in.inventory.tensors.size()},
                        {"flops_per_token", f.total},
                        {"flop_convention", f.convention},
                        {"flops_breakdown",
                         {{"attention_projections", f.attention_projections},
                          {"attention_scores", f.attention_scores},
                          {"dense_mlp", f.dense_mlp},
                          {"router", f.router},
                          {"experts", f.experts},
                          {"lm_head", f.lm_head}}}};
  // Hybrid and MTP models' parts, only where the model has them.
  if (f.mamba > 0) out["flops_breakdown"]["mamba"] = f.mamba;
  if (f.mtp > 0) out["flops_breakdown"]["mtp"] = f.mtp;
  return out;
}

// "5 chunk passes (3 + 2), 2.5 microbatch equivalents, 41.20 GiB saved activations".
std::string in_flight_text(const StageLedger& s) {
  std::int64_t total = 0;
  std::string mix;
  for (const std::int64_t n : s.in_flight_chunks) {
    total += n;
    mix += (mix.empty() ? "" : " + ") + std::to_string(n);
  }
  std::string out = std::to_string(total) + " chunk pass(es)";
  if (s.in_flight_chunks.size() > 1) out += " (" + mix + ")";
  return out + ", " + fmt("%g", s.in_flight_microbatches) + " microbatch equivalent(s), " +
         fmt("%.2f", s.activation_bytes / kGiB) + " GiB saved activations";
}

}  // namespace

nlohmann::json ledger_json(const LedgerInputs& in) {
  const auto& p = in.scenario.plan;
  const auto& hw = in.scenario.hardware;
  const BatchShape batch = batch_shape(p, in.scenario.arch);
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : in.ledger.stages) {
    nlohmann::json phases = nlohmann::json::array();
    for (const auto& ph : s.phases) {
      phases.push_back({{"phase", name_of(ph.phase)},
                        {"bytes", ph.bytes()},
                        {"GiB", ph.bytes() / kGiB},
                        {"items", items_json(ph.items)}});
    }
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"local_params", s.local_params},
                      {"in_flight_chunks", s.in_flight_chunks},
                      {"in_flight_microbatches", s.in_flight_microbatches},
                      {"saved_activations_GiB", s.activation_bytes / kGiB},
                      {"persistent", items_json(s.persistent)},
                      {"persistent_GiB", s.persistent_bytes / kGiB},
                      {"phases", phases},
                      {"peak_phase", name_of(s.peak_phase)},
                      {"peak_allocated_GiB", s.peak_allocated / kGiB},
                      {"peak_reserved_GiB", s.peak_reserved / kGiB},
                      {"reserved_required_GiB", s.reserved_required / kGiB},
                      {"allocator",
                       {{"model", name_of(p.allocator.model)},
                        {"expandable_segments", p.allocator.expandable_segments},
                        {"basis", s.allocator_basis}}},
                      {"runtime_reserves_GiB", s.runtime_reserves / kGiB},
                      {"device_total_GiB", s.device_total / kGiB},
                      {"capacity_GiB", s.capacity / kGiB},
                      {"headroom_GiB", s.headroom / kGiB},
                      {"oom", s.oom},
                      {"top_contributors", items_json(s.top_contributors)},
                      {"optimizer_layout",
                       {{"layout", s.optimizer.layout},
                        {"largest_rank_GiB", s.optimizer.largest_bytes / kGiB},
                        {"even_share_GiB", s.optimizer.even_share_bytes / kGiB},
                        {"replicated_tensors", s.optimizer.replicated_tensors},
                        {"sharded_tensors", s.optimizer.sharded_tensors}}}});
    // A rerun step's: which try the stage's ledger is (written only for a step that reruns).
    if (!in.ledger.rerun.empty()) stages.back()["try"] = s.rerun_try ? "synced dropless" : "first";
  }
  const auto& worst = in.ledger.stages[in.ledger.worst_stage];
  nlohmann::json out = {{"schema", "moesim-ledger/1"},
                        {"scenario", in.scenario.name},
                        {"design", p.design},
                        {"model", model_json(in)},
                        {"plan",
                         {{"world", p.world()},
                          {"pp", p.pp},
                          {"tp", p.tp},
                          {"cp", p.cp},
                          {"dp", p.dp()},
                          {"ep_mp", p.ep},
                          {"etp", p.etp},
                          {"ep_dp", p.ep_dp()},
                          {"distributed_optimizer", p.distributed_optimizer},
                          {"ep_transport", name_of(p.ep_transport)},
                          {"microbatch_tokens", batch.microbatch_tokens},
                          {"microbatches", batch.microbatches},
                          {"global_batch_tokens", p.global_batch_tokens}}},
                        {"hardware",
                         {{"name", hw.name},
                          {"fragmentation_fraction", hw.memory.fragmentation_fraction.value},
                          {"fragmentation_source", hw.memory.fragmentation_fraction.source}}},
                        {"peak_allocated_GiB", worst.peak_allocated / kGiB},
                        {"peak_reserved_GiB", worst.peak_reserved / kGiB},
                        {"device_total_GiB", worst.device_total / kGiB},
                        {"capacity_GiB", worst.capacity / kGiB},
                        {"oom", in.ledger.oom},
                        {"breaking_phase", name_of(worst.peak_phase)},
                        {"in_flight_source", in.ledger.in_flight_source},
                        {"stages", stages},
                        {"inputs", in.scenario.resolved}};
  if (!in.ledger.rerun.empty()) out["rerun"] = in.ledger.rerun;
  return out;
}

std::string ledger_table(const LedgerInputs& in) {
  std::ostringstream os;
  const auto& p = in.scenario.plan;
  const BatchShape batch = batch_shape(p, in.scenario.arch);
  os << "scenario " << in.scenario.name << "  (design " << design_name(p) << ", hardware " << in.scenario.hardware.name
     << ")\n";
  os << "model    " << in.scenario.arch.name << ": " << fmt("%.2f", in.inventory.params_total / 1e9) << "B total, "
     << fmt("%.2f", in.inventory.params_active / 1e9) << "B active, " << fmt("%.3f", in.flops.total / 1e9)
     << " GFLOP/token (" << in.flops.convention << ")\n";
  // DP here counts the data-parallel replicas of a sequence (the dp() of the plan over CP).
  os << "plan     world " << p.world() << " = PP " << p.pp;
  if (p.tp > 1) os << " x TP " << p.tp;
  if (p.cp > 1) os << " x CP " << p.cp;
  os << " x DP " << p.dp() / p.cp << " (EP-MP " << p.ep;
  if (p.etp > 1) os << " x ETP " << p.etp;
  os << " x EP-DP " << p.ep_dp() << "), microbatch " << batch.microbatch_tokens << " tokens x m=" << batch.microbatches
     << "\n";
  os << "in flight: forward passes held per stage and model chunk, from " << in.ledger.in_flight_source << "\n";
  if (!in.ledger.rerun.empty()) {
    os << "rerun: every step runs twice (the sync-free MoE path retries in synced dropless mode): " << in.ledger.rerun
       << "; each stage shows the try that needs more\n";
  }
  for (const auto& s : in.ledger.stages) {
    os << "\nstage " << s.stage << ": " << s.layers << " layers, " << fmt("%.3f", s.local_params / 1e9)
       << "B local params, in flight " << in_flight_text(s) << " at the peak";
    if (!in.ledger.rerun.empty()) os << (s.rerun_try ? ", the synced dropless try" : ", the first try (budget, stash)");
    os << "\n";
    os << "  persistent training state\n";
    for (const auto& i : s.persistent) os << "    " << gib(i.bytes) << "  " << i.name << "  [" << i.basis << "]\n";
    os << "    " << gib(s.persistent_bytes) << "  total\n";
    os << "  working memory by phase\n";
    for (const auto& ph : s.phases) {
      os << "    " << gib(ph.bytes()) << "  " << name_of(ph.phase) << (ph.phase == s.peak_phase ? "  <- peak" : "")
         << "\n";
      for (const auto& i : ph.items) {
        if (i.bytes <= 0) continue;
        os << "      " << gib(i.bytes) << "  " << i.name;
        for (std::size_t f = 0; f < i.by_format.size(); ++f) {
          os << (f == 0 ? "  (" : ", ") << i.by_format[f].first << " " << fmt("%.2f GiB", i.by_format[f].second / kGiB)
             << (f + 1 == i.by_format.size() ? ")" : "");
        }
        os << "\n";
      }
    }
    os << "  optimizer layout " << s.optimizer.layout << ": largest rank " << gib(s.optimizer.largest_bytes)
       << " vs even share " << gib(s.optimizer.even_share_bytes) << ", " << s.optimizer.replicated_tensors
       << " tensor(s) replicated\n";
    os << "  peak allocated " << gib(s.peak_allocated) << " (" << name_of(s.peak_phase) << "), reserved "
       << gib(s.peak_reserved) << ", + runtime reserves " << gib(s.runtime_reserves) << " = " << gib(s.device_total)
       << " of " << gib(s.capacity) << "\n";
    os << "  allocator (" << name_of(p.allocator.model) << "): " << s.allocator_basis << "\n";
    os << "  verdict: " << (s.oom ? "OUT OF MEMORY" : "fits") << " (headroom " << gib(s.headroom)
       << (s.reserved_required < s.peak_reserved ? ", counting the cache it can release" : "") << ")\n";
    if (s.oom) {
      os << "  top contributors:\n";
      for (const auto& i : s.top_contributors) os << "    " << gib(i.bytes) << "  " << i.name << "\n";
    }
  }
  return os.str();
}

std::string inventory_table(const Inventory& inv) {
  TextTable table({{"tensor", Align::left},
                   {"class", Align::left},
                   {"layer", Align::right},
                   {"params", Align::right},
                   {"shape", Align::left}});
  for (const auto& t : inv.tensors) {
    std::string shape;
    for (auto d : t.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
    table.add(
        {t.name, std::string(name_of(t.cls)), std::to_string(t.layer), std::to_string(t.numel), "[" + shape + "]"});
  }
  return table.render() + fmt("total %.4fB params, ", inv.params_total / 1e9) +
         fmt("active %.4fB\n", inv.params_active / 1e9);
}

nlohmann::json inventory_json(const Inventory& inv) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : inv.tensors) {
    tensors.push_back(
        {{"name", t.name}, {"shape", t.shape}, {"numel", t.numel}, {"class", name_of(t.cls)}, {"layer", t.layer}});
  }
  return {{"schema", "moesim-inventory/1"},
          {"params_total", inv.params_total},
          {"params_active", inv.params_active},
          {"tensors", tensors}};
}

}  // namespace moesim
