// Time of one GPU kernel (dense GEMM, grouped GEMM, flash attention, memory-bound kernels) on a
// hardware profile. One interface per kind of kernel; implementations are chosen by name from a
// registry. Every rate comes from the profile (sustained, with provenance); none lives in code.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "models/common/registry.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim {

struct KernelTime {
  double time_s = 0;           // wall time of the kernel, launch overhead included
  double flops = 0;            // useful floating-point operations (0 for memory-bound kernels)
  double hbm_bytes = 0;        // estimated HBM traffic (reads + writes)
  double achieved_TFLOPs = 0;  // flops / time_s / 1e12
  double rate_TFLOPs = 0;      // the sustained rate the compute term used (0 if none)
  bool memory_bound = false;   // the HBM roofline floor set the time
};

// Piecewise-linear interpolation of a profile table in log(x), clamped to the end values: GEMM
// efficiency grows roughly with log(rows) between the measured points (report Table 44).
double interpolate_log_x(const ProfileTable& table, double x);

// Sustained dense BF16 GEMM rate at M = rows, from compute.gemm_bf16_TFLOPs_by_rows.
double dense_gemm_rate_TFLOPs(const HardwareProfile& hw, double rows);

// C[M,N] = A[M,K] · B[K,N] in BF16.
struct GemmShape {
  double m = 0;  // rows of A and C
  double n = 0;  // columns of B and C
  double k = 0;  // the reduction dimension
};

// One grouped GEMM: expert e multiplies rows_per_expert[e] rows by its own [K, N] weight.
struct GroupedGemmShape {
  std::span<const double> rows_per_expert;
  double n = 0;
  double k = 0;
};

class GemmCost {
 public:
  virtual ~GemmCost() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for `moesim cost --list`
  virtual KernelTime time(const HardwareProfile& hw, const GemmShape& shape) const = 0;
};

class GroupedGemmCost {
 public:
  virtual ~GroupedGemmCost() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for `moesim cost --list`
  virtual KernelTime time(const HardwareProfile& hw, const GroupedGemmShape& shape) const = 0;
};

struct AttentionShape {
  double sequences = 1;  // sequences in the microbatch
  double seq_len = 0;    // tokens per sequence
  double heads = 0;      // query heads
  double kv_heads = 0;   // key/value heads (GQA); 0 means = heads
  double head_dim = 0;
  bool causal = true;
};

struct AttentionTime {
  KernelTime forward;
  KernelTime backward;
};

class AttentionCost {
 public:
  virtual ~AttentionCost() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for `moesim cost --list`
  virtual AttentionTime time(const HardwareProfile& hw, const AttentionShape& shape) const = 0;
};

// A kernel bounded by HBM traffic: elementwise ops, copies, gradient accumulation, optimizer.
class MemoryBoundCost {
 public:
  virtual ~MemoryBoundCost() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for `moesim cost --list`
  virtual KernelTime time(const HardwareProfile& hw, double bytes) const = 0;
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
