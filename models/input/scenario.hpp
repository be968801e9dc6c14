// A scenario names (or inlines) the three orthogonal inputs — architecture, parallel plan,
// hardware profile — and may override any of their fields ("set" in the file, --set on the CLI).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/arch/architecture.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct Scenario {
  std::string name;
  std::string file;
  std::string flop_convention;
  CostModelChoice cost_models;  // the cost models and resource-sharing policy, by name
  Architecture arch;
  ParallelPlan plan;
  HardwareProfile hardware;
  nlohmann::json resolved;  // {architecture, plan, hardware} after every override
  nlohmann::json sweep;     // the scenario's "sweep" block (axes, include), if any
  nlohmann::json compare;   // the scenario's "compare" block (designs), if any
};

// `sets` are CLI --set expressions, applied after the scenario's own "set" block. Besides field
// paths, `design=ddp+ep8` expands to plan overrides, and `architecture=FILE` (or plan=,
// hardware=) swaps a whole input for a file, relative to the scenario's folder.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets);
// The same for a scenario document already read; `path` names it and anchors relative paths.
Scenario load_scenario_document(const nlohmann::json& raw, const std::string& path,
                                const std::vector<std::string>& sets);

// Builds a scenario from an already composed document {architecture, plan, hardware, ...};
// `origin` names where each section came from for error messages.
struct SectionOrigin {
  std::string file;
  std::string prefix;  // JSON path of the section inside `file` ("" when the file is the section)
};
Scenario parse_composed(const nlohmann::json& doc, const std::string& scenario_file,
                        const SectionOrigin& arch, const SectionOrigin& plan, const SectionOrigin& hw);

}  // namespace moesim
