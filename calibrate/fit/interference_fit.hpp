// The interference section from the harness's interference group: the GEMM's slowdown beside a
// collective (interference.compute_slowdown_with_comm, the fair_share rule's factor) and a
// collective's slowdown beside a GEMM or grouped GEMM (interference.comm_slowdown_with_compute,
// the sm_hbm_share rule's factor), the inverses of sim/resource_sharing.cpp.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

FitOutput fit_interference(const FitInputs& in);

}  // namespace moesim::fit
