// Dense and grouped GEMM time from the profile's measured BF16 rate tables (an FP8 format at its
// measured ratio over BF16), with an HBM roofline floor and a fixed launch overhead.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/common/errors.hpp"
#include "models/common/units.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/costs/kernel_roofline.hpp"

namespace moesim {

namespace {
using namespace costs_detail;
constexpr double kBf16 = bytes_of(DType::bf16);

// The profile's spec of a low-precision format; a plan the scenario check let through never
// reaches here without one, so a miss is a caller's bug named plainly.
const LowPrecisionGemmSpec& low_precision_spec(const HardwareProfile& hw, GemmPrecision p) {
  const LowPrecisionGemmSpec* spec = hw.compute.low_precision(p);
  if (spec == nullptr) {
    std::string msg = "hardware profile \"";
    msg += hw.name;
    msg += "\" has no compute.";
    msg += name_of(p);
    msg += "_gemm rates";
    throw InputError("", "precision", msg);
  }
  return *spec;
}

// Operand bytes per element: FP8 formats carry one byte per element (MXFP8 adds one E8M0 scale
// per 32, which a roofline floor can ignore); the output is BF16 either way.
double operand_bytes(GemmPrecision p) { return p == GemmPrecision::bf16 ? kBf16 : bytes_of(DType::fp8); }

double dense_precision_ratio(const HardwareProfile& hw, GemmPrecision p, double rows) {
  if (p == GemmPrecision::bf16) return 1.0;
  return interpolate_log_x(low_precision_spec(hw, p).gemm_over_bf16_by_rows, rows);
}

// Rate of a backward pass over the forward rate of the same dense shape (profile, by pass).
double dense_pass_ratio(const HardwareProfile& hw, GemmPass pass) {
  switch (pass) {
    case GemmPass::forward: return 1.0;
    case GemmPass::dgrad: return hw.compute.gemm_dgrad_over_forward.value;
    case GemmPass::wgrad: return hw.compute.gemm_wgrad_over_forward.value;
  }
  return 1.0;
}

double grouped_pass_ratio(const HardwareProfile& hw, GemmPass pass, double rows_per_expert, double log_rows) {
  switch (pass) {
    case GemmPass::forward: return 1.0;
    case GemmPass::dgrad:
      return interpolate_log_x(hw.compute.grouped_gemm_dgrad_over_forward_by_rows_per_expert, rows_per_expert,
                               log_rows);
    case GemmPass::wgrad:
      return interpolate_log_x(hw.compute.grouped_gemm_wgrad_over_forward_by_rows_per_expert, rows_per_expert,
                               log_rows);
  }
  return 1.0;
}

// "table": time(M,N,K) = 2MNK / rate(M), rate interpolated from the measured
// [M, 8192] x [8192, 81920] sweep (report Table 44); bytes = BF16 A, B and C once each.
class TableGemmCost final : public GemmCost {
 public:
  TableGemmCost()
      : GemmCost("table",
                 "Dense GEMM: 2MNK over the profile's measured BF16 rate at M rows (log-interpolated; FP8 formats at "
                 "their measured ratio), HBM roofline floor") {}
  KernelTime time(const HardwareProfile& hw, const GemmShape& shape) const override {
    const auto [m, n, k, pass, precision] = shape;
    require_positive(m, "m");
    require_positive(n, "n");
    require_positive(k, "k");
    const double flops = 2.0 * m * n * k;  // one multiply-add = 2 FLOPs per output term
    const double rate =
        dense_gemm_rate_TFLOPs(hw, m) * dense_pass_ratio(hw, pass) * dense_precision_ratio(hw, precision, m);
    const double bytes = operand_bytes(precision) * (m * k + k * n) + kBf16 * m * n;
    KernelTime t = roofline_kernel(hw, flops, flops / (rate * 1e12), bytes);
    t.rate_TFLOPs = rate;
    return t;
  }
};

// "table" grouped GEMM (one kernel over all experts, as torch._grouped_mm / CUTLASS grouped):
//  - each expert's FLOPs run at efficiency(its rows) x dense rate(total rows): the report's
//    grouped-over-dense ratios (same work split into experts; shared/calibration/
//    published-kernel-data.md) measure exactly this ratio for uniform splits;
//  - floor 1: the most-loaded expert: a grouped kernel cannot finish before that expert's GEMM
//    alone would at the dense rate for its row count (imbalance makes the largest expert the
//    critical path);
//  - floor 2: HBM roofline over all experts' A, B and C.
class TableGroupedGemmCost final : public GroupedGemmCost {
 public:
  TableGroupedGemmCost()
      : GroupedGemmCost(
            "table",
            "Grouped GEMM: each expert at efficiency(its rows) x dense rate(total rows), floored by the largest expert "
            "and HBM") {}
  KernelTime time(const HardwareProfile& hw, const GroupedGemmShape& shape) const override {
    const auto [rows_per_expert, n, k, pass, precision] = shape;
    require_positive(n, "n");
    require_positive(k, "k");
    if (rows_per_expert.empty()) throw InputError("", "rows_per_expert", "needs at least one expert");
    double total = 0, largest = 0, active = 0;
    for (double r : rows_per_expert) {
      if (!(r >= 0) || !std::isfinite(r)) {
        throw InputError("", "rows_per_expert", "row counts must be finite and >= 0");
      }
      total += r;
      largest = std::max(largest, r);
      if (r > 0) active += 1;
    }
    if (total == 0) {  // nothing routed: the kernel still launches
      KernelTime t;
      t.time_s = launch_s(hw);
      return t;
    }
    const double flops = 2.0 * total * n * k;
    // Each expert's work runs at efficiency(its rows) x dense rate(total rows); for uniform
    // routing this is efficiency(total / experts) x dense rate, and skew makes small experts
    // (tile quantization) and very large ones (the measured drop past ~1k rows) cost more.
    const double dense_Fps = dense_gemm_rate_TFLOPs(hw, total) * 1e12;
    // A backward pass runs at the forward's efficiency times its measured ratio at those rows; an
    // FP8 format at its measured ratio over BF16 at those rows per expert.
    const LowPrecisionGemmSpec* low = precision == GemmPrecision::bf16 ? nullptr : &low_precision_spec(hw, precision);
    // An expert's time depends on its rows alone: under uniform routing every expert has the same
    // rows, so the last expert's time is reused while the rows repeat (the same sum, term by term).
    double grouped_s = 0, last_rows = 0, last_s = 0;
    for (double r : rows_per_expert) {
      if (r <= 0) continue;
      if (r != last_rows) {
        const double log_r = std::log(r);
        const double format =
            low == nullptr ? 1.0 : interpolate_log_x(low->grouped_gemm_over_bf16_by_rows_per_expert, r, log_r);
        last_s = 2.0 * r * n * k /
                 (interpolate_log_x(hw.compute.grouped_gemm_efficiency_by_rows_per_expert, r, log_r) *
                  grouped_pass_ratio(hw, pass, r, log_r) * format * dense_Fps);
        last_rows = r;
      }
      grouped_s += last_s;
    }
    const double rate = flops / grouped_s / 1e12;
    const double largest_s = 2.0 * largest * n * k /
                             (dense_gemm_rate_TFLOPs(hw, largest) * dense_pass_ratio(hw, pass) *
                              dense_precision_ratio(hw, precision, largest) * 1e12);
    const double bytes = operand_bytes(precision) * (total * k + active * k * n) + kBf16 * total * n;
    KernelTime t = roofline_kernel(hw, flops, std::max(grouped_s, largest_s), bytes);
    t.rate_TFLOPs = rate;
    return t;
  }
};
}  // namespace

GemmPrecision parse_gemm_precision(std::string_view name) { return kGemmPrecisionNames.parse(name); }

GemmPass parse_gemm_pass(std::string_view name) { return kGemmPassNames.parse(name); }

double interpolate_log_x(const ProfileTable& table, double x, double log_of_x) {
  const auto& p = table.points();
  if (p.empty()) throw std::logic_error("interpolate_log_x: empty table (the parser forbids it)");
  if (!(x > p.front().x)) return p.front().y;  // clamp below (also catches x <= 0 and NaN)
  if (x >= p.back().x) return p.back().y;      // clamp above
  const auto hi = std::upper_bound(p.begin(), p.end(), x, [](double v, const TablePoint& pt) { return v < pt.x; });
  const auto i = static_cast<std::size_t>(hi - p.begin());
  const auto& lx = table.log_x();
  const double w = (log_of_x - lx[i - 1]) / (lx[i] - lx[i - 1]);
  return p[i - 1].y + w * (p[i].y - p[i - 1].y);
}

double interpolate_log_x(const ProfileTable& table, double x) {
  return interpolate_log_x(table, x, x > 0 ? std::log(x) : 0.0);
}

double dense_gemm_rate_TFLOPs(const HardwareProfile& hw, double rows) {
  const double table = interpolate_log_x(hw.compute.gemm_bf16_TFLOPs_by_rows, rows);
  // A step runs its GEMMs back to back at the board's power limit: no shape sustains more than
  // the power-limited rate (the pass and FP8 ratios, measured against the table, apply on top).
  const auto& limited = hw.compute.gemm_power_limited_TFLOPs;
  return limited ? std::min(table, limited->value) : table;
}

const Registry<GemmCost>& gemm_cost_models() {
  static const auto registry = make_registry<GemmCost, TableGemmCost>("GEMM cost model");
  return registry;
}

const Registry<GroupedGemmCost>& grouped_gemm_cost_models() {
  static const auto registry = make_registry<GroupedGemmCost, TableGroupedGemmCost>("grouped GEMM cost model");
  return registry;
}

}  // namespace moesim
