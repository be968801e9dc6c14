// The registered designs, and finding the one a plan selects.
#include <algorithm>
#include <stdexcept>

#include "models/common/enum_names.hpp"
#include "models/plan/designs/design.hpp"

namespace moesim {

const Registry<DesignEntry>& design_entries() {
  static const auto registry = [] {
    Registry<DesignEntry> r("design");
    r.add(make_fsdp2_full_reshard_design());
    r.add(make_olmo_ddp_design());
    r.add(make_ddp_design());
    r.add(make_fsdp2_shard_grad_op_design());
    r.add(make_zero2_design());
    r.add(make_fsdp1_full_shard_design());
    return r;
  }();
  return registry;
}

const DesignEntry& design_of(const ParallelPlan& plan) {
  const DesignEntry* found = nullptr;
  design_entries().for_each([&](const DesignEntry& entry) {
    if (found == nullptr && entry.word() == plan.design && entry.selected_by(plan)) found = &entry;
  });
  if (found != nullptr) return *found;
  throw std::logic_error("no registered design for plan.design \"" + plan.design + "\" and its options");
}

std::vector<std::string> design_words() {
  std::vector<std::string> out;
  for (const auto& name : design_entries().names()) {
    const std::string word(design_entries().get(name).word());
    if (std::find(out.begin(), out.end(), word) == out.end()) out.push_back(word);
  }
  return out;
}

const DesignEntry& first_design_of(std::string_view word) {
  for (const auto& name : design_entries().registration_order()) {
    const DesignEntry& entry = design_entries().get(name);
    if (entry.word() == word) return entry;
  }
  throw std::logic_error("no registered design for the word \"" + std::string(word) + "\"");
}

DesignDefaults design_defaults(std::string_view word) { return first_design_of(word).defaults(); }

std::vector<PlannerFamily> planner_families() {
  std::vector<PlannerFamily> out;
  for (const auto& name : design_entries().registration_order()) {
    const DesignEntry& entry = design_entries().get(name);
    for (PlannerFamily& family : entry.families()) {
      family.entry = &entry;
      out.push_back(std::move(family));
    }
  }
  return out;
}

PlannerFamily planner_family(std::string_view name) {
  std::vector<std::string> names;
  for (PlannerFamily& family : planner_families()) {
    if (family.name == name) return family;
    names.emplace_back(family.name);
  }
  throw_unknown_name("design family", name, names);
}

}  // namespace moesim
