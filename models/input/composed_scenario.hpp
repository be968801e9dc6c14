// A composed scenario: the architecture, parallel plan and hardware profile after every override,
// with the FLOP convention and cost models by name. A plain value: what the simulator, the studies
// and the writers take. Reading and composing one is models/input/scenario.hpp's business.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/arch/architecture.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/stacks/stack_preset.hpp"

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
  StackUse stack;           // the plan's training stack and the values the plan took from it
};

}  // namespace moesim
