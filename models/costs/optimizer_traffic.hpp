// HBM traffic of one optimizer update, per parameter element, by how the update is written
// (OptimizerKernels): each foreach op is its own pass over every tensor it touches, so an
// unfused AdamW moves several times the bytes of a fused one.
#pragma once

#include "models/common/cost_types.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct UpdateTraffic {
  double bytes_per_element = 0;  // read + written
  MemoryKernel kind = MemoryKernel::optimizer;
};

// `grad`: the dtype of the gradient the update reads (the FP32 main gradient).
UpdateTraffic update_traffic(const OptimizerSpec& optimizer, DType grad);

}  // namespace moesim
