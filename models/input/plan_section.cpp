#include "models/input/plan_section.hpp"

#include "models/common/json_reader.hpp"
#include "models/input/plan_profile_checks.hpp"
#include "models/stacks/stack_preset.hpp"

namespace moesim {

// Parses `plan` (the plan section, from `origin`) into `s`, with its training stack's values
// under the keys it leaves unset; `memo`: the thread's recent plans, or null to parse afresh.
void read_plan_section(Scenario& s, const nlohmann::json& section, const SectionOrigin& origin,
                       SectionMemo<ParallelPlan>* memo) {
  nlohmann::json stacked;
  const nlohmann::json* named = &section;
  if (named->is_object() && named->contains("stack")) {
    stacked = *named;
    s.stack = apply_stack(stacked);
    named = &stacked;
  }
  const nlohmann::json& plan = *named;
  const auto parse = [&] { return parse_plan(JsonReader(plan, origin.file, origin.prefix)); };
  s.plan = memo != nullptr ? memo->get(plan, origin.file, origin.prefix, parse) : parse();
  // A stack's MoE decisions (its EP dispatcher, its dropless routing) mean nothing to a model
  // without MoE layers: not listed as taken.
  if (!s.arch.moe) {
    std::erase_if(s.stack.taken, [](const StackSetting& t) {
      return t.path.starts_with("expert_parallel.") || t.path.starts_with("routing.");
    });
  }
}

// Checks the parsed plan of `s` against its architecture and hardware profile, and prices the
// kernels it names.
void check_plan_section(Scenario& s, const SectionOrigin& origin) {
  validate_plan(s.plan, s.arch, origin.file, origin.prefix);
  const double node = s.hardware.node.gpus_per_node.value;
  if (static_cast<double>(s.plan.gpus_per_node) > node) {
    const std::string path = origin.prefix.empty() ? "gpus_per_node" : origin.prefix + ".gpus_per_node";
    const auto host = static_cast<long long>(node);
    std::string hint;
    if (s.plan.world() % host == 0) {
      hint = "; the same " + std::to_string(s.plan.world()) +
             " GPUs on this profile are plan.nodes=" + std::to_string(s.plan.world() / host) +
             " with plan.gpus_per_node=" + std::to_string(host) +
             " (hosts in one NVLink domain share it: interconnect.intra_node.domain_gpus)";
    }
    throw InputError(origin.file, path,
                     std::to_string(s.plan.gpus_per_node) + " GPUs per node exceeds the " + std::to_string(host) +
                         " of one host of hardware profile \"" + s.hardware.name + "\"" + hint,
                     /*infeasible=*/true);
  }
  s.plan.domain_hosts = hosts_per_domain(s.hardware);
  check_plan_against_profile(s.plan, s.hardware, origin.file, origin.prefix);
  price_plan_kernels(s.plan, s.hardware, s.stack, origin.file, origin.prefix);
}

bool starts_with_path(const std::string& path, const std::string& prefix) {
  return path == prefix || (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
                            (path[prefix.size()] == '.' || path[prefix.size()] == '['));
}

// An error in a plan section from its own file, named from the scenario's top ("plan.x"), as
// compose names a path a change set: code's typed values (a plan search's candidate) are blamed
// on no change, yet its refusals are counted by path.
InputError from_the_top(const InputError& e, const SectionOrigin& plan) {
  if (e.file() != plan.file || !plan.prefix.empty() || starts_with_path(e.path(), "plan")) return e;
  return InputError(e.file(), e.path().empty() ? "plan" : "plan." + e.path(), e.message(), e.infeasible());
}

Scenario with_plan_section(const ScenarioSource& source, const Scenario& base, nlohmann::json plan) {
  // The base's model choices, architecture and profile; the plan, its stack and the resolved
  // document are made here.
  Scenario s{base.name, base.file, base.flop_convention, base.cost_models, base.arch, {}, base.hardware, {}, {}};
  const SectionOrigin& origin = source.inputs.plan;
  try {
    read_plan_section(s, plan, origin, nullptr);
    check_plan_section(s, origin);
  } catch (const InputError& e) {
    throw from_the_top(e, origin);
  }
  s.resolved = nlohmann::json::object();
  for (const auto& [section, value] : base.resolved.items())
    if (section != "plan") s.resolved[section] = value;
  s.resolved["plan"] = std::move(plan);
  return s;
}

}  // namespace moesim
