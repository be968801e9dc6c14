#include "models/hw/profile_provenance.hpp"

#include "models/hw/hardware_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace moesim {

namespace {

std::string number_text(const nlohmann::ordered_json& v) {
  if (!v.is_number()) return v.is_string() ? v.get<std::string>() : v.dump();
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v.get<double>());
  return text;
}

// "10 points (rows 128 to 65536)": a table's size and the range of its x key.
std::string table_text(const nlohmann::ordered_json& points) {
  std::string text = std::to_string(points.size()) + " points";
  if (points.empty() || !points.front().is_object()) return text;
  const std::string x = points.front().begin().key();  // every table's first key is its x
  return text + " (" + x + " " + number_text(points.front().at(x)) + " to " + number_text(points.back().at(x)) + ")";
}

void walk(const nlohmann::ordered_json& node, const std::string& path, std::vector<ProvenanceEntry>& out) {
  if (!node.is_object()) return;
  if (node.contains("kind") && node.contains("source") && node.at("kind").is_string()) {
    const std::string value = node.contains("points")  ? table_text(node.at("points"))
                              : node.contains("value") ? number_text(node.at("value"))
                                                       : "";
    out.push_back({path, value, node.at("kind").get<std::string>(), node.at("source").get<std::string>()});
    return;
  }
  for (const auto& [key, child] : node.items()) walk(child, path.empty() ? key : path + "." + key, out);
}

// The fields that price the kernels dominating a step's compute (models/costs/gemm_costs.cpp,
// attention_memory_costs.cpp).
const std::vector<std::pair<const char*, std::vector<const char*>>> kDominant = {
    {"dense GEMM",
     {"compute.gemm_bf16_TFLOPs_by_rows", "compute.gemm_power_limited_TFLOPs", "compute.gemm_dgrad_over_forward",
      "compute.gemm_wgrad_over_forward"}},
    {"grouped GEMM",
     {"compute.grouped_gemm_efficiency_by_rows_per_expert",
      "compute.grouped_gemm_dgrad_over_forward_by_rows_per_expert",
      "compute.grouped_gemm_wgrad_over_forward_by_rows_per_expert"}},
    {"attention",
     {"compute.attention_fwd_TFLOPs", "compute.attention_bwd_TFLOPs", "compute.attention_fwd_TFLOPs_by_seq_len",
      "compute.attention_bwd_TFLOPs_by_seq_len"}}};

}  // namespace

std::vector<std::string> assumed_kernel_classes(const HardwareProfile& hw, bool moe) {
  const ComputeSpec& c = hw.compute;
  const auto assumed = [](auto... kinds) { return ((kinds == SourceKind::assumption) || ...); };
  std::vector<std::string> out;
  const bool limit_assumed = c.gemm_power_limited_TFLOPs && assumed(c.gemm_power_limited_TFLOPs->kind);
  if (assumed(c.gemm_bf16_TFLOPs_by_rows.kind) || limit_assumed)
    out.emplace_back("dense GEMM rates");
  else if (assumed(c.gemm_dgrad_over_forward.kind, c.gemm_wgrad_over_forward.kind))
    out.emplace_back("dense GEMM backward ratios");
  if (moe && assumed(c.grouped_gemm_efficiency_by_rows_per_expert.kind))
    out.emplace_back("grouped GEMM efficiencies");
  else if (moe && assumed(c.grouped_gemm_dgrad_over_forward_by_rows_per_expert.kind,
                          c.grouped_gemm_wgrad_over_forward_by_rows_per_expert.kind))
    out.emplace_back("grouped GEMM backward ratios");
  if (assumed(c.attention_fwd_TFLOPs.kind, c.attention_bwd_TFLOPs.kind)) out.emplace_back("attention rates");
  return out;
}

bool KernelClassProvenance::rests_on_assumption() const {
  return std::any_of(fields.begin(), fields.end(), [](const ProvenanceEntry* e) { return e->kind == "assumption"; });
}

std::unique_ptr<ProfileProvenance> profile_provenance(const nlohmann::ordered_json& doc, const std::string& file) {
  auto out = std::make_unique<ProfileProvenance>();
  out->file = file;
  out->name = doc.value("name", std::string());
  out->description = doc.value("description", std::string());
  walk(doc, "", out->entries);
  for (const auto& e : out->entries) ++out->by_kind[e.kind];
  for (const auto& [kernel_class, paths] : kDominant) {
    KernelClassProvenance k{kernel_class, {}};
    for (const char* path : paths) {
      for (const auto& e : out->entries)
        if (e.path == path) k.fields.push_back(&e);
    }
    out->dominant.push_back(std::move(k));
  }
  return out;
}

}  // namespace moesim
