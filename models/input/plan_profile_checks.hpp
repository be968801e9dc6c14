// What a plan asks of the hardware profile it runs on: GEMM formats whose rates the profile has,
// an EP transport the profile has numbers for, an attention kernel it has rates for. A plan that
// asks for more is refused (an infeasible point: a sweep reports it and goes on).
#pragma once

#include <string>

#include "models/hw/hardware_profile.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/stacks/stack_preset.hpp"

namespace moesim {

// Throws InputError naming `plan_file` and the plan path at fault (under `plan_prefix`).
void check_plan_against_profile(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& plan_file,
                                const std::string& plan_prefix);

// The composed profile priced with the kernels the plan calls: plan.kernels.attention's rates
// (compute.attention_by_kernel) replace compute.attention_*_TFLOPs, provenance included, so every
// cost model, bound and report reads the kernel the stack runs. Where the profile has no rates
// for it: a kernel the plan named is refused (InputError at kernels.attention); one its training
// stack chose is priced at the profile's own rates, and the stack's listed value says so. Then
// plan.precision.attention fp8 / mxfp8 takes compute.fp8_attention / mxfp8_attention's tables by
// sequence length (cuDNN's kernel only; refused at precision.attention where the profile has none).
// The profile's attention tables replaced by its measured `format` attention's (FP8 or MXFP8;
// plan.precision.attention); false, and `hw` unchanged, where it has none. BF16: true, unchanged.
bool take_attention_format(HardwareProfile& hw, GemmPrecision format);

void price_plan_kernels(ParallelPlan& plan, HardwareProfile& hw, StackUse& stack, const std::string& plan_file,
                        const std::string& plan_prefix);

}  // namespace moesim
