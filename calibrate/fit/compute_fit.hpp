// Compute and memory fields from kernel measurements: the dense GEMM table by rows, grouped-
// GEMM efficiency by rows per expert and sustained HBM bandwidth (the interference section:
// interference_fit.hpp). The inverse of models/costs/gemm_costs.cpp and the hbm model.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

// The dense table is fitted first: grouped-GEMM efficiency divides by it (or, when the files
// hold no dense GEMMs, by the base profile's table).
FitOutput fit_compute(const FitInputs& in);

}  // namespace moesim::fit
