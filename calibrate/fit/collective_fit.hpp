// Collective curves: per (kind, NCCL algorithm, group size, NVLink domains) a weighted least-
// squares fit time = latency + bytes / algbw, mapped to the profile's interconnect section:
// busbw efficiencies and base latencies inside one domain, NIC efficiency and network hop
// latency across domains. The inverse of models/costs/collective_algorithms.cpp.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

FitOutput fit_collectives(const FitInputs& in);

}  // namespace moesim::fit
