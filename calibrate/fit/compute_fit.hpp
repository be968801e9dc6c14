// Compute and memory fields from kernel measurements: the dense forward GEMM table by rows and
// the dgrad / wgrad ratios over it, the grouped-GEMM tables (grouped_fit.hpp), sustained HBM
// bandwidth and the memory-kernel classes' fractions of it (the interference section:
// interference_fit.hpp). The inverse of models/costs/gemm_costs.cpp and the memory-kernel model.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

// The dense forward table is fitted first: the pass ratios and grouped-GEMM efficiency divide by
// it (or, when the files hold no forward dense GEMMs, by the base profile's table).
FitOutput fit_compute(const FitInputs& in);

// The memory-kernel class a harness memory kind measures (the classes the fit sets fractions
// for; memcpy_d2d, the copy rate itself, is `copy`).
MemoryKernel memory_class_of(const std::string& kind);

}  // namespace moesim::fit
