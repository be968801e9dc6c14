#include "calibrate/fit/low_precision_fit.hpp"

#include <map>
#include <set>

#include "calibrate/fit/least_squares.hpp"

namespace moesim::fit {

namespace {

// The FP8 tensor cores run twice BF16's dense peak (every Hopper and Blackwell datasheet), and
// BF16 may sit further under its own peak than FP8: a ratio outside (0, 3] (the profile's range,
// models/hw/profile_sections.cpp) is another kernel or another GPU, not this field.
constexpr double kMaxRatio = 3;

struct Fitted {
  std::vector<TablePoint> points;
  std::string source;
  bool ok = false;
};

// Per x (rows, or rows per expert) the median over shapes of BF16 median time / FP8 median time.
Fitted fit_table(const FitInputs& in, const std::string& kind, const std::string& what, FitOutput& out) {
  std::map<double, std::vector<double>> by_x;
  std::set<std::string> files, methods;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != kind || m.check == "failed") continue;
      if (std::min(m.n, m.k) < in.options.gemm_min_nk) continue;
      double x = static_cast<double>(m.m);
      if (kind == "grouped_gemm_fp8") {
        double total = 0;
        for (auto r : m.rows_per_expert) total += static_cast<double>(r);
        x = round_sig(total / static_cast<double>(m.rows_per_expert.size()), 6);
        methods.insert(m.method);
      }
      by_x[x].push_back(m.reference_median_us / m.median_us);
      files.insert(f.file);
    }
  }
  Fitted fit;
  if (by_x.empty()) return fit;
  std::vector<double> values, refs;
  for (const auto& [x, ratios] : by_x) {
    fit.points.push_back({x, median_of(ratios)});
    for (double r : ratios) values.push_back(r), refs.push_back(fit.points.back().y);
  }
  const Spread s = relative_spread(values, refs);
  const int n = static_cast<int>(values.size());
  double lo = fit.points.front().y, hi = lo;
  for (const auto& p : fit.points) lo = std::min(lo, p.y), hi = std::max(hi, p.y);
  fit.ok = lo > 0 && hi <= kMaxRatio;
  const std::string field = kind == "gemm_fp8" ? "compute.fp8_gemm.gemm_over_bf16_by_rows"
                                               : "compute.fp8_gemm.grouped_gemm_over_bf16_by_rows_per_expert";
  out.curves.push_back(
      {what, n, std::to_string(fit.points.size()) + " points, median per x", s.rms_rel, s.max_rel, fit.ok ? field : "",
       fit.ok ? "" : "not mapped: a ratio of " + sig4(hi > kMaxRatio ? hi : lo) + " is outside (0, 3]"});
  std::string via;
  for (const auto& m : methods) via += (via.empty() ? "" : ", ") + m;
  fit.source = "moesim fit: BF16 median time / FP8 (E4M3, scaled) median time on the same " +
               std::string(kind == "gemm_fp8" ? "dense shape (N, K >= " + sig4(in.options.gemm_min_nk) + "), per M"
                                              : "grouped shape (" + via + "), per rows per expert") +
               ", the median over shapes; " + residual_text(s.rms_rel, s.max_rel, n) +
               " (shapes against their x's median); measurements: " + in.provenance(files);
  return fit;
}

}  // namespace

FitOutput fit_low_precision(const FitInputs& in) {
  FitOutput out;
  const Fitted dense = fit_table(in, "gemm_fp8", "fp8 gemm / bf16 by rows", out);
  const Fitted grouped = fit_table(in, "grouped_gemm_fp8", "fp8 grouped gemm / bf16 by rows per expert", out);
  if (dense.points.empty() && grouped.points.empty()) return out;
  if (!dense.ok || !grouped.ok) {
    out.warnings.push_back(
        "compute.fp8_gemm: not written: a profile's fp8_gemm section holds both the dense and the grouped table, and "
        "the measurements give " +
        std::string(dense.ok     ? "only the dense one"
                    : grouped.ok ? "only the grouped one"
                                 : "neither"));
    return out;
  }
  out.updates.push_back({{"compute", "fp8_gemm", "gemm_over_bf16_by_rows"},
                         table_json("rows", "ratio", dense.points, dense.source),
                         std::to_string(dense.points.size()) + " points"});
  out.updates.push_back({{"compute", "fp8_gemm", "grouped_gemm_over_bf16_by_rows_per_expert"},
                         table_json("rows_per_expert", "ratio", grouped.points, grouped.source),
                         std::to_string(grouped.points.size()) + " points"});
  return out;
}

}  // namespace moesim::fit
