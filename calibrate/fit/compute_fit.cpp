#include "calibrate/fit/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/fit/grouped_fit.hpp"
#include "calibrate/fit/least_squares.hpp"
#include "models/costs/compute_costs.hpp"

namespace moesim::fit {

namespace {

double tflops(double flops, double median_us) { return flops / (median_us * 1e6); }  // FLOP / us -> TFLOP/s

// The profile's range for a pass ratio (models/hw/profile_sections.cpp kPassRatio).
constexpr double kMaxPassRatio = 1.5;

// Dense GEMM: median TFLOP/s per M over the shapes with large N and K (hardware_profiles/README:
// "sustained dense BF16 GEMM rate against M for large N and K").
ProfileTable fit_gemm(const FitInputs& in, FitOutput& out) {
  std::map<std::int64_t, std::vector<double>> by_m;
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      // The forward rate: dgrad and wgrad have their own ratios over it (fit_dense_passes).
      if (m.kind != "gemm" || m.check == "failed" || m.layout != "fwd") continue;
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

// Dense passes: models/costs/gemm_costs.cpp prices a pass at table(M) x ratio(pass), M the token
// rows for dgrad and the output features for wgrad ((out, in, T), as the harness's layouts); so
// ratio = 2MNK / median time / table(M), median over the shapes with M, N, K all large.
void fit_dense_passes(const FitInputs& in, const DenseForward& dense, FitOutput& out) {
  std::map<std::string, std::vector<double>> by_pass;
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "gemm" || m.check == "failed" || m.layout == "fwd") continue;
      if (std::min({m.m, m.n, m.k}) < in.options.gemm_min_nk) continue;
      const double rate = tflops(2.0 * m.m * m.n * m.k, m.median_us);  // 2MNK FLOPs
      by_pass[m.layout].push_back(rate / interpolate_log_x(dense.table, static_cast<double>(m.m)));
      files.insert(f.file);
    }
  }
  for (const auto& [layout, ratios] : by_pass) {
    const double ratio = median_of(ratios);
    const Spread s = relative_spread(ratios, std::vector<double>(ratios.size(), ratio));
    const int n = static_cast<int>(ratios.size());
    const std::string field = "gemm_" + layout + "_over_forward";
    const bool ok = ratio > 0 && ratio <= kMaxPassRatio;
    out.curves.push_back({"gemm " + layout + " / forward (M,N,K >= " + sig4(in.options.gemm_min_nk) + ")", n,
                          "median " + sig4(ratio), s.rms_rel, s.max_rel, ok ? "compute." + field : "",
                          ok ? "" : "not mapped: ratio " + sig4(ratio) + " outside (0, 1.5]"});
    if (!ok) continue;
    const std::string source =
        "moesim fit: median over dense BF16 " + layout + " GEMMs with M, N, K >= " + sig4(in.options.gemm_min_nk) +
        " of 2MNK / median time / " + (dense.fitted ? "the fitted" : "the base profile's") +
        " forward table at M (the cost model's pass ratio); " + residual_text(s.rms_rel, s.max_rel, n) +
        " (shapes against their median); measurements: " + in.provenance(files);
    out.updates.push_back({{"compute", field}, fitted_quantity(ratio, source), sig4(round_sig4(ratio))});
  }
}

// Each memory kernel's GB/s (bytes read + written / median time) at sizes well past L2, and the
// files they came from.
struct MemoryRates {
  std::map<std::string, std::vector<double>> by_kind;
  std::map<std::string, std::set<std::string>> files;
};

MemoryRates memory_rates(const FitInputs& in) {
  MemoryRates r;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (!is_memory_kind(m.kind) || m.check == "failed" || m.bytes < in.options.hbm_min_bytes) continue;
      r.by_kind[m.kind].push_back(static_cast<double>(m.bytes) / (m.median_us * 1e3));  // B / us -> GB/s
      r.files[m.kind].insert(f.file);
    }
  }
  return r;
}

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// HBM: the highest GB/s of a memory-bound kernel, which is what streaming kernels sustain.
// Returns the copy rate the profile holds afterwards (fitted, else the base's) and whether fitted.
std::pair<double, bool> fit_hbm(const FitInputs& in, const MemoryRates& rates, FitOutput& out) {
  const std::pair<double, bool> base{in.base.compute.hbm_sustained_GBps.value, false};
  if (rates.by_kind.empty()) return base;
  std::string best_kind;
  double best = 0;
  for (const auto& [kind, gbps] : rates.by_kind) {
    if (is_streaming_memory_kind(kind) && max_of(gbps) > best) best = max_of(gbps), best_kind = kind;
  }
  if (best_kind.empty()) return base;
  const auto& pts = rates.by_kind.at(best_kind);
  const Spread s = relative_spread(pts, std::vector<double>(pts.size(), best));
  const int n = static_cast<int>(pts.size());
  const std::string name = "hbm GB/s (" + best_kind + ", >= " + sig4(in.options.hbm_min_bytes / (1 << 20)) + " MiB)";
  const std::string why = implausible(best, in.base.gpu.hbm_bw_GBps.value, name, "GB/s", in.base.name, out.warnings);
  out.curves.push_back({name, n, "max " + sig4(best) + " GB/s", s.rms_rel, s.max_rel,
                        why.empty() ? "compute.hbm_sustained_GBps" : "", why});
  if (!why.empty()) return base;
  const std::string source = "moesim fit: highest (bytes read + written) / median time of the memory-bound kernels " +
                             std::string("at >= ") + sig4(in.options.hbm_min_bytes / (1 << 20)) + " MiB, from " +
                             best_kind + "; " + residual_text(s.rms_rel, s.max_rel, n) +
                             " (its large sizes against the max)" +
                             "; measurements: " + in.provenance(rates.files.at(best_kind));
  out.updates.push_back(
      {{"compute", "hbm_sustained_GBps"}, fitted_quantity(best, source), sig4(round_sig4(best)) + " GB/s"});
  return {round_sig4(best), true};
}

// The kernels of each class the harness measures (memory_class_bench.cpp: cast, row gather, row
// softmax, multi-tensor AdamW; the streaming group: accumulation, a cast and add, and flat fused
// AdamW), and how a class with several picks one:
//   fastest  every kernel streams contiguous elements the same way, so the slower one shows its
//            own overhead, not the class's rate (on an H200, 2026-12-04, the harness's scalar
//            BF16->FP32 cast moved 2565 GB/s and the accumulation, a cast and add, 3405);
//   first    the first is the workload's shape (AdamW over one block's many per-tensor shards in
//            65536-element chunks, as PyTorch's multi_tensor_apply runs it), the others a fallback.
struct ClassKernels {
  const char* cls;
  std::vector<const char*> kinds;
  bool fastest;
};
const ClassKernels kClassKernels[] = {{"elementwise", {"cast_bf16_to_fp32", "grad_accum_bf16_to_fp32"}, true},
                                      {"permute", {"permute_rows_bf16"}, false},
                                      {"cross_entropy", {"softmax_rows_bf16"}, false},
                                      {"optimizer", {"adamw_fp32_multi_tensor", "adamw_fp32"}, false}};

// Memory-kernel classes: models/costs/attention_memory_costs.cpp runs a kernel of class c at
// hbm_sustained_GBps x fraction(c), so fraction = the class kernel's best GB/s / that copy rate.
void fit_memory_fractions(const FitInputs& in, const MemoryRates& rates, std::pair<double, bool> copy, FitOutput& out) {
  for (const auto& [cls, kinds, fastest] : kClassKernels) {
    auto it = rates.by_kind.end();
    std::string others;  // the class's other measured kernels, for the source
    for (const char* k : kinds) {
      const auto candidate = rates.by_kind.find(k);
      if (candidate == rates.by_kind.end()) continue;
      if (it == rates.by_kind.end()) {
        it = candidate;
        continue;
      }
      const bool replace = fastest && max_of(candidate->second) > max_of(it->second);
      const auto& other = replace ? *it : *candidate;
      others += (others.empty() ? "" : ", ") + other.first + " " + sig4(max_of(other.second)) + " GB/s";
      if (replace) it = candidate;
    }
    if (it == rates.by_kind.end()) continue;
    const std::string& kind = it->first;
    const double best = max_of(it->second), fraction = best / copy.first;
    const Spread s = relative_spread(it->second, std::vector<double>(it->second.size(), best));
    const int n = static_cast<int>(it->second.size());
    const bool ok = fraction > 0 && fraction <= 1;
    out.curves.push_back({std::string("hbm fraction ") + cls, n, kind + " max " + sig4(best) + " GB/s", s.rms_rel,
                          s.max_rel, ok ? std::string("compute.hbm_fraction_by_kernel.") + cls : "",
                          ok ? "" : "not mapped: " + sig4(fraction) + " of the copy rate, outside (0, 1]"});
    if (!ok) continue;
    const std::string source =
        std::string("moesim fit: highest (bytes read + written) / median time of ") + kind +
        " at >= " + sig4(in.options.hbm_min_bytes / (1 << 20)) + " MiB over " +
        (copy.second ? "the fitted" : "the base profile's") + " hbm_sustained_GBps (" + sig4(copy.first) + " GB/s); " +
        residual_text(s.rms_rel, s.max_rel, n) + " (its large sizes against the max)" +
        (others.empty() ? ""
                        : std::string("; ") + (fastest ? "the fastest of the class; " : "the workload's kernel; ") +
                              "also measured: " + others) +
        "; measurements: " + in.provenance(rates.files.at(kind));
    out.updates.push_back(
        {{"compute", "hbm_fraction_by_kernel", cls}, fitted_quantity(fraction, source), sig4(round_sig4(fraction))});
  }
}

}  // namespace

MemoryKernel memory_class_of(const std::string& kind) {
  for (const auto& [cls, kinds, fastest] : kClassKernels) {
    for (const char* k : kinds)
      if (kind == k) return kMemoryKernelNames.parse(cls);
  }
  return MemoryKernel::copy;
}

FitOutput fit_compute(const FitInputs& in) {
  FitOutput out;
  DenseForward dense;
  dense.table = fit_gemm(in, out);
  dense.fitted = dense.table.kind == SourceKind::fitted && !out.updates.empty();
  fit_dense_passes(in, dense, out);
  fit_grouped(in, dense, out);
  const MemoryRates rates = memory_rates(in);
  fit_memory_fractions(in, rates, fit_hbm(in, rates, out), out);
  return out;
}

}  // namespace moesim::fit
