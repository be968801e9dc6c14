// A scenario names (or inlines) the three orthogonal inputs — architecture, parallel plan,
// hardware profile — and may override any of their fields ("set" in the file, --set on the CLI),
// choose the FLOP convention and cost models by name, and declare what studies ask of it
// (sweep axes, designs to compare).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/arch/architecture.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/input/composed_scenario.hpp"
#include "models/input/overrides.hpp"
#include "models/input/sweep_spec.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/plan_keys.hpp"

namespace moesim {

// Where a section's JSON came from, for error messages.
struct SectionOrigin {
  std::string file;
  std::string prefix;  // JSON path of the section inside `file` ("" when the file is the section)
};

// A change to a scenario and who made it ("--set", "FILE: set", ...), blamed in errors.
struct ScenarioChange {
  Override change;
  std::string origin;
};

// What changes edit: the composed document, where each section came from, the model choices,
// and the changes applied so far (in order, for blame). compose() copies the fields one by one
// when it leaves the hardware section out: a field added here is added there too.
struct ScenarioInputs {
  std::string file;
  std::string name;
  std::string flop_convention;
  CostModelChoice cost_models;
  nlohmann::json doc;  // {architecture, plan, hardware}
  SectionOrigin arch, plan, hardware;
  std::vector<ScenarioChange> changes;
};

// A scenario as read from its files with the overrides it was given, before any point's changes,
// and what its studies ask (its "sweep" and "compare" blocks). A study makes each of its points
// from one source without reading the scenario's files again.
struct ScenarioSource {
  ScenarioInputs inputs;
  SweepSpec sweep;      // axes and included points
  CompareSpec compare;  // designs side by side
  // The hardware section parsed once (null where it does not parse): a point whose changes leave
  // the section as it is takes a copy instead of parsing the profile again (a sweep point's
  // largest input cost).
  std::shared_ptr<const HardwareProfile> parsed_hardware;
};

// `sets` are CLI --set expressions, applied after the scenario's own "set" block. Besides field
// paths, `design=ddp+ep8` expands to plan overrides, `flop_convention=palm` and
// `cost_models.gemm=table` choose models, and `architecture=FILE` (or plan=, hardware=) swaps a
// whole input for a file, relative to the scenario's folder.
ScenarioSource read_scenario(const std::string& path, const std::vector<std::string>& sets);
// The same for a scenario document already read; `path` names it and anchors relative paths.
ScenarioSource read_scenario_document(const nlohmann::json& raw, const std::string& path,
                                      const std::vector<std::string>& sets);

// The source with `changes` made its own, after its other changes: every point of a study made
// from it carries them (a plan search's host size applies to the base and every candidate).
ScenarioSource with_changes(ScenarioSource source, const std::vector<ScenarioChange>& changes);

// What compose records in Scenario::resolved: every section, or all but the hardware profile's
// when no change edits it (its largest, which a sweep writing no per-point inputs would copy at
// every point only to drop it).
enum class ResolvedRecord { all_sections, without_unchanged_hardware };

// The source with `changes` applied after its own, parsed and checked. Throws InputError naming
// the file and path at fault, or the change that set the bad value.
Scenario compose(const ScenarioSource& source, const std::vector<ScenarioChange>& changes = {},
                 ResolvedRecord record = ResolvedRecord::all_sections);

// `base` (composed from `source`) with its plan section replaced by `plan`, written by code (a
// plan search's candidate): only that section is parsed and checked again; the architecture, the
// hardware profile and their resolved documents are the base's. An error names its path from
// the scenario's top ("plan.pipeline.degree").
Scenario with_plan_section(const ScenarioSource& source, const Scenario& base, nlohmann::json plan);

// compose with `plan_sets`, code's typed values (a plan search's candidate), written into the
// plan section before `changes` apply. An error in the plan section names its path from the
// scenario's top ("plan.pipeline.degree").
Scenario compose(const ScenarioSource& source, std::span<const PlanSet> plan_sets,
                 const std::vector<ScenarioChange>& changes, ResolvedRecord record);

// read_scenario then compose.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets);

// Who a study's design point is blamed on: errors in the plan fields a design such as "ddp+ep3"
// expands to name "--design 'ddp+ep3'".
inline constexpr std::string_view kDesignOrigin = "--design";

// Changes for a point of a study: each (path, value) as a change from `origin` (a "design" path
// from the default origin is a change from kDesignOrigin).
std::vector<ScenarioChange> changes_of(const PointOverrides& point, const std::string& origin = "--set");

}  // namespace moesim
