// Where every number of a hardware profile comes from: each field that carries a provenance (a
// quantity or a table, each with its `kind` and `source`), in the document's order, counted by
// kind, and the provenance of the kernel classes that dominate a training step's compute.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

struct ProvenanceEntry {
  std::string path;    // JSON path from the profile's root ("compute.gemm_bf16_TFLOPs_by_rows")
  std::string value;   // the value as written, or "N points (x from A to B)" for a table
  std::string kind;    // datasheet, published, fitted, assumption
  std::string source;  // the field's own source text
};

// A dominant kernel class and the fields that price it.
struct KernelClassProvenance {
  std::string kernel_class;  // "dense GEMM", "grouped GEMM", "attention"
  std::vector<const ProvenanceEntry*> fields;
  bool rests_on_assumption() const;  // any of its fields is an assumption
};

struct ProfileProvenance {
  std::string name, file, description;
  std::vector<ProvenanceEntry> entries;
  std::map<std::string, std::size_t> by_kind;
  std::vector<KernelClassProvenance> dominant;  // points into `entries`: keep the object whole
};

// What the kernels that dominate a step rest on where `hw` assumes it: "dense GEMM rates" (or only
// its "backward ratios"), the same for grouped GEMM (when the model routes experts), "attention
// rates"; empty when every one is measured, published or fitted.
struct HardwareProfile;
std::vector<std::string> assumed_kernel_classes(const HardwareProfile& hw, bool moe);

// `doc` must parse as a profile (parse_hardware_profile first: this reads it as written, in the
// file's key order). The result is not copyable: `dominant` points into `entries`.
std::unique_ptr<ProfileProvenance> profile_provenance(const nlohmann::ordered_json& doc, const std::string& file);

}  // namespace moesim
