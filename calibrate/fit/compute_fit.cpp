#include "calibrate/fit/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/fit/least_squares.hpp"
#include "models/costs/compute_costs.hpp"

namespace moesim::fit {

namespace {

double tflops(double flops, double median_us) { return flops / (median_us * 1e6); }  // FLOP / us -> TFLOP/s

nlohmann::ordered_json table_json(const std::string& x_key, const std::string& y_key,
                                  const std::vector<TablePoint>& pts, const std::string& source) {
  nlohmann::ordered_json t;
  t["kind"] = "fitted";
  t["source"] = source;
  t["points"] = nlohmann::ordered_json::array();
  for (const auto& p : pts) t["points"].push_back({{x_key, round_sig(p.x, 6)}, {y_key, round_sig4(p.y)}});
  return t;
}

// Dense GEMM: median TFLOP/s per M over the shapes with large N and K (hardware_profiles/README:
// "sustained dense BF16 GEMM rate against M for large N and K").
ProfileTable fit_gemm(const FitInputs& in, FitOutput& out) {
  std::map<std::int64_t, std::vector<double>> by_m;
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      // wgrad's M is a weight dimension (tokens are K there): the table is keyed by token rows.
      if (m.kind != "gemm" || m.check == "failed" || m.layout == "wgrad") continue;
      if (m.n < in.options.gemm_min_nk || m.k < in.options.gemm_min_nk) continue;
      by_m[m.m].push_back(tflops(2.0 * m.m * m.n * m.k, m.median_us));  // 2MNK FLOPs
      files.insert(f.file);
    }
  }
  if (by_m.empty()) return in.base.compute.gemm_bf16_TFLOPs_by_rows;
  ProfileTable table;
  std::vector<double> values, refs;
  for (const auto& [m, rates] : by_m) {
    table.add({static_cast<double>(m), median_of(rates)});
    for (double r : rates) values.push_back(r), refs.push_back(table.points().back().y);
  }
  const Spread s = relative_spread(values, refs);
  const int n = static_cast<int>(values.size());
  const std::string name = "gemm TFLOPs by rows (N,K >= " + sig4(in.options.gemm_min_nk) + ")";
  double best = 0;
  for (const auto& p : table.points()) best = std::max(best, p.y);
  const std::string why =
      implausible(best, in.base.gpu.peak_bf16_TFLOPs.value, name + ", best", "TFLOP/s", in.base.name, out.warnings);
  out.curves.push_back({name, n, std::to_string(table.points().size()) + " M values, median per M", s.rms_rel,
                        s.max_rel, why.empty() ? "compute.gemm_bf16_TFLOPs_by_rows" : "", why});
  if (!why.empty()) return in.base.compute.gemm_bf16_TFLOPs_by_rows;
  const std::string source = "moesim fit: median over dense BF16 GEMMs with N, K >= " + sig4(in.options.gemm_min_nk) +
                             " of 2MNK / median time, per M; " + residual_text(s.rms_rel, s.max_rel, n) +
                             " (shapes against their M's median); measurements: " + in.provenance(files);
  out.updates.push_back({{"compute", "gemm_bf16_TFLOPs_by_rows"},
                         table_json("rows", "TFLOPs", table.points(), source),
                         std::to_string(table.points().size()) + " points"});
  table.kind = SourceKind::fitted;
  return table;
}

// Grouped GEMM: rate / dense rate(total rows), keyed by mean rows per expert, uniform routing only
// (models/costs/gemm_costs.cpp: efficiency(total / experts) x dense rate(total rows)).
void fit_grouped(const FitInputs& in, const ProfileTable& dense, bool dense_fitted, FitOutput& out) {
  std::map<std::string, double> best;  // shape|layout|x -> best method's ratio
  std::map<std::string, double> x_of;
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "grouped_gemm" || m.check == "failed" || m.zipf_s != 0) continue;
      double total = 0;
      for (auto r : m.rows_per_expert) total += static_cast<double>(r);
      if (total <= 0) continue;
      const double fixed = m.m == 0 ? static_cast<double>(m.n) * m.k : static_cast<double>(m.m) * m.n;
      const double ratio = tflops(2.0 * total * fixed, m.median_us) / interpolate_log_x(dense, total);
      const double x = round_sig(total / static_cast<double>(m.rows_per_expert.size()), 6);
      const std::string key = m.label + "|" + m.layout + "|" + std::to_string(x);
      best[key] = std::max(best[key], ratio);  // the faster method is what a framework would pick
      x_of[key] = x;
      files.insert(f.file);
    }
  }
  if (best.empty()) return;
  std::map<double, std::vector<double>> by_x;
  for (const auto& [key, ratio] : best) by_x[x_of[key]].push_back(ratio);
  std::vector<TablePoint> pts;
  std::vector<double> values, refs;
  for (const auto& [x, ratios] : by_x) {
    pts.push_back({x, median_of(ratios)});
    for (double r : ratios) values.push_back(r), refs.push_back(pts.back().y);
  }
  const Spread s = relative_spread(values, refs);
  const int n = static_cast<int>(values.size());
  CurveReport rep{"grouped GEMM / dense by rows per expert",
                  n,
                  std::to_string(pts.size()) + " points, median per x",
                  s.rms_rel,
                  s.max_rel,
                  "",
                  ""};
  for (const auto& p : pts) {
    if (!(p.y > 0 && p.y <= 1.5)) rep.note = "not mapped: ratio " + sig4(p.y) + " outside (0, 1.5]";
  }
  if (rep.note.empty()) {
    rep.field = "compute.grouped_gemm_efficiency_by_rows_per_expert";
    const std::string source =
        "moesim fit: uniform-routing grouped GEMM rate (2 x rows x fixed dims / median time, best method per shape) "
        "/ " +
        std::string(dense_fitted ? "the fitted" : "the base profile's") + " dense table at the same total rows, by " +
        "mean rows per expert, median over shapes; " + residual_text(s.rms_rel, s.max_rel, n) +
        " (shapes against their median); measurements: " + in.provenance(files);
    out.updates.push_back({{"compute", "grouped_gemm_efficiency_by_rows_per_expert"},
                           table_json("rows_per_expert", "fraction_of_dense", pts, source),
                           std::to_string(pts.size()) + " points"});
  }
  out.curves.push_back(rep);
}

// HBM: the highest GB/s (bytes read + written / median time) of a memory-bound kernel at a size
// well past L2, which is what streaming kernels sustain.
void fit_hbm(const FitInputs& in, FitOutput& out) {
  std::map<std::string, std::vector<double>> by_kernel;
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (!is_memory_kind(m.kind) || m.check == "failed" || m.bytes < in.options.hbm_min_bytes) continue;
      by_kernel[m.kind].push_back(static_cast<double>(m.bytes) / (m.median_us * 1e3));  // B / us -> GB/s
      files.insert(f.file);
    }
  }
  if (by_kernel.empty()) return;
  std::string best_kind;
  double best = 0;
  for (const auto& [kind, gbps] : by_kernel) {
    const double mx = *std::max_element(gbps.begin(), gbps.end());
    if (mx > best) best = mx, best_kind = kind;
  }
  const auto& pts = by_kernel[best_kind];
  const Spread s = relative_spread(pts, std::vector<double>(pts.size(), best));
  const int n = static_cast<int>(pts.size());
  const std::string name = "hbm GB/s (" + best_kind + ", >= " + sig4(in.options.hbm_min_bytes / (1 << 20)) + " MiB)";
  const std::string why = implausible(best, in.base.gpu.hbm_bw_GBps.value, name, "GB/s", in.base.name, out.warnings);
  out.curves.push_back({name, n, "max " + sig4(best) + " GB/s", s.rms_rel, s.max_rel,
                        why.empty() ? "compute.hbm_sustained_GBps" : "", why});
  if (!why.empty()) return;
  const std::string source = "moesim fit: highest (bytes read + written) / median time of the memory-bound kernels " +
                             std::string("at >= ") + sig4(in.options.hbm_min_bytes / (1 << 20)) + " MiB, from " +
                             best_kind + "; " + residual_text(s.rms_rel, s.max_rel, n) +
                             " (its large sizes against the max)" + "; measurements: " + in.provenance(files);
  out.updates.push_back(
      {{"compute", "hbm_sustained_GBps"}, fitted_quantity(best, source), sig4(round_sig4(best)) + " GB/s"});
}

}  // namespace

FitOutput fit_compute(const FitInputs& in) {
  FitOutput out;
  const ProfileTable dense = fit_gemm(in, out);
  fit_grouped(in, dense, dense.kind == SourceKind::fitted && !out.updates.empty(), out);
  fit_hbm(in, out);
  return out;
}

}  // namespace moesim::fit
