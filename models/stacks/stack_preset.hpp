// Training-stack presets (plan.stack): what Olmo-core, Megatron-Core, torchtitan and Composer
// decide that a plan can also say itself: the loss path, the gradient path, the optimizer's
// kernels and layout, the low-precision library. A preset is a list of plan keys with the value
// the stack's code uses and where in that code it is decided; every value is a modelled
// mechanism chosen by an ordinary plan key, so the plan's own keys win and a preset adds nothing
// a plan could not write. One file per stack (models/stacks/), one registry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/registry.hpp"

namespace moesim {

// One decision of a stack: the plan key (a dotted path inside the plan, "activations.loss"), its
// value as JSON text, the repository file and function that make it, and the plan.design word
// it belongs to (empty: every design; a DDP gradient path means nothing to FSDP).
struct StackValue {
  std::string_view path;
  std::string_view value;
  std::string_view source;
  std::string_view design = {};
  bool applies_to(std::string_view plan_design) const { return design.empty() || design == plan_design; }
};

class StackPreset : public Registered {
 public:
  StackPreset(std::string_view name, std::string_view description, std::string_view code,
              std::vector<StackValue> values)
      : Registered(name, description), code_(code), values_(std::move(values)) {}
  // The repository and revision the values were read from.
  std::string_view code() const { return code_; }
  const std::vector<StackValue>& values() const { return values_; }

 private:
  std::string_view code_;
  std::vector<StackValue> values_;
};

// Registered under "olmo-core", "megatron-core", "megatron-bridge", "megatron-bridge-perf", "torchtitan",
// "composer".
const Registry<StackPreset>& stack_presets();

// A value a plan took from its stack (reports print them with their source).
struct StackSetting {
  std::string path;  // inside the plan
  nlohmann::json value;
  std::string source;
  std::string note = {};  // what became of the value on this scenario ("" when it applies as set)
};
struct StackUse {
  std::string name;  // empty: the plan names no stack
  std::string code;
  std::vector<StackSetting> taken;
};

// When `plan` names a registered stack ("stack": "olmo-core"), writes each of the stack's values
// whose key the plan leaves unset into it and returns what it took; otherwise leaves the plan as
// it is (the plan's parse refuses an unknown stack, listing the valid ones).
StackUse apply_stack(nlohmann::json& plan);

}  // namespace moesim
