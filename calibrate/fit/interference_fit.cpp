#include "calibrate/fit/interference_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/fit/least_squares.hpp"

namespace moesim::fit {

namespace {

// Time ratios (with / alone) and the files they came from, keyed by what was slowed.
struct Ratios {
  std::map<std::string, std::vector<double>> by_key;
  std::vector<double> all;
  std::set<std::string> files;
};

// "x1.234": a time ratio (appended, not `"x" + std::string`: GCC 12 reports a false -Wrestrict).
std::string ratio_text(double ratio) {
  std::string text = "x";
  text += sig4(ratio);
  return text;
}

// The profile's range for comm_slowdown_with_compute (models/hw/hardware_profile.cpp).
constexpr double kMaxCommSlowdown = 4.0;
// compute_slowdown_with_comm's range there: a GEMM never loses all of its SMs.
constexpr double kMaxComputeSlowdown = 0.95;

// Slowdown = median GEMM time with a collective on another stream / median alone, minus 1 (the
// harness's interference group; cf. report Table 9).
void fit_compute_side(const FitInputs& in, FitOutput& out) {
  std::vector<double> ratios;
  std::set<std::string> files;
  std::string what;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "interference" || !m.usable || m.check == "failed") continue;
      if (m.group_size < 2) continue;  // one_rank_records()
      ratios.push_back(m.median_us / m.alone_median_us);
      what += (what.empty() ? "" : ", ") + m.background + " " + sig4(ratios.back() - 1);
      files.insert(f.file);
    }
  }
  if (ratios.empty()) return;
  const double ratio = median_of(ratios);
  const Spread s = relative_spread(ratios, std::vector<double>(ratios.size(), ratio));
  const double slowdown = std::clamp(ratio - 1.0, 0.0, kMaxComputeSlowdown);
  const int n = static_cast<int>(ratios.size());
  out.curves.push_back({"gemm slowdown with comm", n, ratio_text(ratio) + " time", s.rms_rel, s.max_rel,
                        "interference.compute_slowdown_with_comm",
                        slowdown != ratio - 1 ? "clamped to [0, 0.95]" : ""});
  const std::string source = "moesim fit: median over backgrounds of GEMM median time with / alone - 1 (" + what + ")" +
                             (slowdown != ratio - 1 ? ", clamped to [0, 0.95]" : "") + "; " +
                             residual_text(s.rms_rel, s.max_rel, n) + " (time ratios against their median)" +
                             "; measurements: " + in.provenance(files);
  out.updates.push_back(
      {{"interference", "compute_slowdown_with_comm"}, fitted_quantity(slowdown, source), sig4(round_sig4(slowdown))});
}

Ratios comm_side_ratios(const FitInputs& in) {
  Ratios r;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "interference_comm" || !m.usable || m.check == "failed") continue;
      if (m.group_size < 2) continue;  // one_rank_records()
      const double ratio = m.median_us / m.alone_median_us;
      r.by_key[m.collective + " " + m.dtype].push_back(ratio);
      r.all.push_back(ratio);
      r.files.insert(f.file);
    }
  }
  return r;
}

// In sm_hbm_share (sim/resource_sharing.cpp) a collective beside a compute kernel runs at
// min(link share, 1/(1+s), HBM share). In the harness's setting the collective is alone on its
// links (share 1) and the GEMM is a compute kernel, which asks no HBM share, so the HBM share is
// the same alone and beside it (1 while the collective's own traffic stays under sustained HBM):
// time beside / time alone = 1 + s, and s = median over records of that ratio - 1.
void fit_comm_side(const FitInputs& in, FitOutput& out) {
  const Ratios r = comm_side_ratios(in);
  if (r.all.empty()) return;
  const double ratio = median_of(r.all);
  const double slowdown = std::clamp(ratio - 1.0, 0.0, kMaxCommSlowdown);
  const bool clamped = slowdown != ratio - 1;
  std::string per_kind, lowest, highest;
  double lo = 0, hi = 0;
  std::vector<double> within, within_refs;  // each record against its own kind's median
  for (const auto& [key, ratios] : r.by_key) {
    const double kind_ratio = median_of(ratios);
    const Spread s = relative_spread(ratios, std::vector<double>(ratios.size(), kind_ratio));
    out.curves.push_back({"comm beside compute: " + key, static_cast<int>(ratios.size()),
                          ratio_text(kind_ratio) + " time (s " + sig4(kind_ratio - 1) + ")", s.rms_rel, s.max_rel, "",
                          "per kind; the profile holds one value"});
    per_kind += (per_kind.empty() ? "" : ", ") + key + " " + sig4(kind_ratio - 1);
    if (lowest.empty() || kind_ratio < lo) lo = kind_ratio, lowest = key;
    if (highest.empty() || kind_ratio > hi) hi = kind_ratio, highest = key;
    if (ratios.size() < 2) continue;  // one record shows no scatter
    within.insert(within.end(), ratios.begin(), ratios.end());
    within_refs.insert(within_refs.end(), ratios.size(), kind_ratio);
  }
  const Spread noise = relative_spread(within, within_refs);
  const Spread s = relative_spread(r.all, std::vector<double>(r.all.size(), ratio));
  const int n = static_cast<int>(r.all.size());
  out.curves.push_back({"comm slowdown beside compute", n,
                        ratio_text(ratio) + " time over " + std::to_string(r.by_key.size()) + " kinds", s.rms_rel,
                        s.max_rel, "interference.comm_slowdown_with_compute",
                        clamped ? "clamped to [0, " + sig4(kMaxCommSlowdown) + "]" : ""});
  // Kinds differ when their medians lie further apart than twice the records' own scatter about
  // their kind's median (a two-sigma difference; kinds measured twice or more give the scatter):
  // one profile value then misprices some of them.
  const double kind_spread = lo > 0 ? hi / lo - 1 : 0;
  // With no kind measured twice the scatter is unknown: no verdict.
  if (r.by_key.size() > 1 && !within.empty() && kind_spread > 2 * noise.rms_rel) {
    out.warnings.push_back("interference.comm_slowdown_with_compute: the collective kinds differ (" + per_kind +
                           "): " + highest + " is " + sig4(100 * kind_spread) + "% slower beside compute than " +
                           lowest + ", more than twice the records' scatter within a kind (rms " +
                           sig4(100 * noise.rms_rel) + "%); the profile holds one value for all kinds, so the fitted " +
                           "median misprices the extremes by up to " + sig4(100 * s.max_rel) + "%");
  }
  const std::string source =
      "moesim fit: sm_hbm_share runs a collective beside a compute kernel at min(link share, 1/(1+s), HBM share); "
      "alone on its links and beside a GEMM (no HBM share asked) that is 1/(1+s), so s = median over records of "
      "collective median time beside a GEMM or grouped GEMM / median alone - 1 (per kind: " +
      per_kind + ")" + (clamped ? ", clamped to [0, " + sig4(kMaxCommSlowdown) + "]" : "") + "; " +
      residual_text(s.rms_rel, s.max_rel, n) +
      " (time ratios against their median); measurements: " + in.provenance(r.files);
  out.updates.push_back(
      {{"interference", "comm_slowdown_with_compute"}, fitted_quantity(slowdown, source), sig4(round_sig4(slowdown))});
}

}  // namespace

// On a one-rank communicator NCCL moves no byte over a link: an all-reduce or all-gather is a
// device-local copy (or nothing), so a slowdown measured beside it is that of a copy kernel, not
// of the collective the profile's fields describe. Such records are reported and not fitted.
void one_rank_records(const FitInputs& in, FitOutput& out) {
  for (const char* kind : {"interference", "interference_comm"}) {
    std::vector<double> ratios;
    for (const auto& f : in.files) {
      for (const auto& m : f.measurements) {
        if (m.kind == kind && m.usable && m.check != "failed" && m.group_size < 2) {
          ratios.push_back(m.median_us / m.alone_median_us);
        }
      }
    }
    if (ratios.empty()) continue;
    const double ratio = median_of(ratios);
    const Spread s = relative_spread(ratios, std::vector<double>(ratios.size(), ratio));
    out.curves.push_back({std::string(kind) + " on one rank", static_cast<int>(ratios.size()),
                          ratio_text(ratio) + " time", s.rms_rel, s.max_rel, "",
                          "not mapped: a one-rank communicator copies locally, no link traffic"});
  }
}

FitOutput fit_interference(const FitInputs& in) {
  FitOutput out;
  one_rank_records(in, out);
  fit_compute_side(in, out);
  fit_comm_side(in, out);
  return out;
}

}  // namespace moesim::fit
