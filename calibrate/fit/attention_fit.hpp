// The attention rates from calibrate/pytorch/attention_bench.py's records: the sustained causal
// flash-attention rate forward and backward (compute.attention_fwd_TFLOPs, attention_bwd_TFLOPs),
// the numbers models/costs/attention_memory_costs.cpp divides the score FLOPs by.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

FitOutput fit_attention(const FitInputs& in);

}  // namespace moesim::fit
