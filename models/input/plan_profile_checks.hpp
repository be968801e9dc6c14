// What a plan asks of the hardware profile it runs on: GEMM formats whose rates the profile has,
// and an EP transport the profile has numbers for. A plan that asks for more is refused (an
// infeasible point: a sweep reports it and goes on).
#pragma once

#include <string>

#include "models/hw/hardware_profile.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

// Throws InputError naming `plan_file` and the plan path at fault (under `plan_prefix`).
void check_plan_against_profile(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& plan_file,
                                const std::string& plan_prefix);

}  // namespace moesim
