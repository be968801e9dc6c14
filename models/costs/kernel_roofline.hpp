// Shared pieces of the kernel cost models: argument checks, launch overhead, HBM rate and the
// roofline combination of compute and memory time.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "models/common/errors.hpp"
#include "models/common/units.hpp"
#include "models/costs/compute_costs.hpp"

namespace moesim::costs_detail {

inline void require_positive(double v, const char* what) {
  if (!(v > 0) || !std::isfinite(v)) {
    throw InputError("", what, "must be a positive finite number, got " + std::to_string(v));
  }
}

inline double launch_s(const HardwareProfile& hw) { return hw.compute.kernel_launch_us.value * 1e-6; }
inline double hbm_Bps(const HardwareProfile& hw) { return hw.compute.hbm_sustained_GBps.value * kGB; }

// Roofline (Williams et al., CACM 2009): a kernel takes at least max(compute, memory) time; the
// launch overhead is paid on top.
inline KernelTime roofline_kernel(const HardwareProfile& hw, double flops, double compute_s, double bytes) {
  KernelTime t;
  t.flops = flops;
  t.hbm_bytes = bytes;
  const double memory_s = bytes / hbm_Bps(hw);
  t.memory_bound = memory_s > compute_s;
  t.time_s = std::max(compute_s, memory_s) + launch_s(hw);
  t.achieved_TFLOPs = t.time_s > 0 ? flops / t.time_s / 1e12 : 0;
  return t;
}

}  // namespace moesim::costs_detail
