// compute.fp8_gemm from calibrate/pytorch/fp8_gemm_bench.py's records: the FP8 (E4M3, scaled)
// dense GEMM's speed over BF16 by rows, and the grouped GEMM's by rows per expert, the two tables
// models/costs/gemm_costs.cpp multiplies the BF16 rates by. Both tables or neither: a profile's
// fp8_gemm section holds both.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

FitOutput fit_low_precision(const FitInputs& in);

}  // namespace moesim::fit
