#include <string>

#include "models/stacks/stack_preset.hpp"
#include "models/stacks/stacks.hpp"

namespace moesim {

namespace {

// The object at `path` minus its last key, made where missing; null when a key on the way holds
// something other than an object (the plan's parse reports that value).
nlohmann::json* parent_of(nlohmann::json& plan, std::string_view path, std::string& last) {
  nlohmann::json* node = &plan;
  std::size_t start = 0;
  for (std::size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', start)) {
    const std::string key(path.substr(start, dot - start));
    if (!node->contains(key)) (*node)[key] = nlohmann::json::object();
    node = &(*node)[key];
    if (!node->is_object()) return nullptr;
    start = dot + 1;
  }
  last = std::string(path.substr(start));
  return node;
}

}  // namespace

const Registry<StackPreset>& stack_presets() {
  static const Registry<StackPreset> registry = [] {
    Registry<StackPreset> r("training stack");
    r.add(olmo_core_stack());
    r.add(megatron_core_stack());
    r.add(megatron_bridge_stack());
    r.add(megatron_bridge_perf_stack());
    r.add(torchtitan_stack());
    r.add(composer_stack());
    return r;
  }();
  return registry;
}

StackUse apply_stack(nlohmann::json& plan) {
  StackUse use;
  if (!plan.is_object()) return use;
  const auto it = plan.find("stack");
  if (it == plan.end() || !it->is_string()) return use;
  const StackPreset* stack = stack_presets().find(it->get<std::string>());
  if (stack == nullptr) return use;
  use.name = std::string(stack->name());
  use.code = std::string(stack->code());
  const auto design = plan.find("design");
  const std::string plan_design = design != plan.end() && design->is_string() ? design->get<std::string>() : "";
  for (const StackValue& v : stack->values()) {
    if (!v.applies_to(plan_design)) continue;
    std::string key;
    nlohmann::json* parent = parent_of(plan, v.path, key);
    if (parent == nullptr || parent->contains(key)) continue;
    const nlohmann::json value = nlohmann::json::parse(v.value);
    (*parent)[key] = value;
    use.taken.push_back({std::string(v.path), value, std::string(v.source)});
  }
  return use;
}

}  // namespace moesim
