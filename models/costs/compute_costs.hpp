// Time of one GPU kernel (dense GEMM, grouped GEMM, flash attention, memory-bound kernels) on a
// hardware profile. One interface per kind of kernel; implementations are chosen by name from a
// registry. Every rate comes from the profile (sustained, with provenance); none lives in code.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "models/common/cost_types.hpp"
#include "models/common/registry.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim {

// Piecewise-linear interpolation of a profile table in log(x), clamped to the end values: GEMM
// efficiency grows roughly with log(rows) between the measured points (report Table 44).
double interpolate_log_x(const ProfileTable& table, double x);
// The same with log(x) already at hand (x > 0), for lookups of one x in several tables.
double interpolate_log_x(const ProfileTable& table, double x, double log_of_x);

// Sustained dense BF16 GEMM rate at M = rows, from compute.gemm_bf16_TFLOPs_by_rows, at most
// compute.gemm_power_limited_TFLOPs where the profile has it.
double dense_gemm_rate_TFLOPs(const HardwareProfile& hw, double rows);

class GemmCost : public Registered {
 public:
  using Registered::Registered;
  virtual KernelTime time(const HardwareProfile& hw, const GemmShape& shape) const = 0;
};

class GroupedGemmCost : public Registered {
 public:
  using Registered::Registered;
  virtual KernelTime time(const HardwareProfile& hw, const GroupedGemmShape& shape) const = 0;
};

class AttentionCost : public Registered {
 public:
  using Registered::Registered;
  virtual AttentionTime time(const HardwareProfile& hw, const AttentionShape& shape) const = 0;
  // A Mamba-2 SSD scan: its chunked algorithm is block matmuls like attention's, run by the same
  // kind of fused kernel.
  virtual AttentionTime scan(const HardwareProfile& hw, const ScanShape& shape) const = 0;
};

// A kernel bounded by HBM traffic: elementwise ops, copies, gradient accumulation, optimizer.
class MemoryBoundCost : public Registered {
 public:
  using Registered::Registered;
  virtual KernelTime time(const HardwareProfile& hw, double bytes, MemoryKernel kind) const = 0;
};

const Registry<GemmCost>& gemm_cost_models();                 // "table"
const Registry<GroupedGemmCost>& grouped_gemm_cost_models();  // "table"
const Registry<AttentionCost>& attention_cost_models();       // "flash"
const Registry<MemoryBoundCost>& memory_bound_cost_models();  // "hbm"

inline constexpr std::string_view kDefaultGemmCost = "table";
inline constexpr std::string_view kDefaultGroupedGemmCost = "table";
inline constexpr std::string_view kDefaultAttentionCost = "flash";
inline constexpr std::string_view kDefaultMemoryBoundCost = "hbm";

}  // namespace moesim
