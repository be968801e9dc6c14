// The dense GEMM rate at the board's power limit (compute.gemm_power_limited_TFLOPs), from
// calibrate/pytorch/sustained_gemm.py's run: the GEMM tables' short measurements start at boost
// clocks and slow within tens of milliseconds as the power limiter engages; a training step runs
// its GEMMs back to back at the settled rate.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

FitOutput fit_power_limit(const FitInputs& in);

}  // namespace moesim::fit
