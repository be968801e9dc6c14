// Grouped-GEMM fields from the harness's grouped_gemm records (uniform routing only): the forward
// efficiency table and the input- and weight-gradient ratio tables, by rows per expert. The
// inverse of models/costs/gemm_costs.cpp: a pass runs at efficiency(x) x dense(total rows) x
// ratio(pass, x), x = total rows / experts.
#pragma once

#include "calibrate/fit/fitted_fields.hpp"

namespace moesim::fit {

// The dense forward table the grouped rates divide by, and whether this fit produced it.
struct DenseForward {
  ProfileTable table;
  bool fitted = false;
};

// compute.grouped_gemm_efficiency_by_rows_per_expert from the fwd records, then the dgrad and
// wgrad tables over the efficiency table in use (fitted, else the base profile's).
void fit_grouped(const FitInputs& in, const DenseForward& dense, FitOutput& out);

}  // namespace moesim::fit
