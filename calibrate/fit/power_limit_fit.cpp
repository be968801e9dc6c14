#include "calibrate/fit/power_limit_fit.hpp"

#include <algorithm>
#include <set>

#include "calibrate/fit/least_squares.hpp"

namespace moesim::fit {

namespace {

// The settled part of a run: its last quarter of windows (sustained_gemm.py's own summary reads the
// same), and the fewest windows that leave that quarter two windows, so that its median is not one
// sample.
constexpr double kSettledShare = 0.25;
constexpr std::size_t kMinSettledWindows = 2;
constexpr auto kMinWindows = static_cast<std::size_t>(kMinSettledWindows / kSettledShare);

std::vector<double> settled(const std::vector<double>& windows) {
  const auto n =
      std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(windows.size()) * kSettledShare));
  return {windows.end() - static_cast<std::ptrdiff_t>(std::min(n, windows.size())), windows.end()};
}

}  // namespace

FitOutput fit_power_limit(const FitInputs& in) {
  FitOutput out;
  std::vector<double> rates;
  std::set<std::string> files;
  std::string runs;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "sustained_gemm") continue;
      const std::string shape = std::to_string(m.m) + " x " + std::to_string(m.n) + " x " + std::to_string(m.k);
      const std::string curve = "sustained BF16 GEMM " + shape;
      if (m.window_TFLOPs.size() < kMinWindows || static_cast<double>(std::min(m.n, m.k)) < in.options.gemm_min_nk) {
        out.curves.push_back({curve, static_cast<int>(m.window_TFLOPs.size()), "", 0, 0, "",
                              "not mapped: needs " + std::to_string(kMinWindows) +
                                  " windows or more and N, K >= " + sig4(in.options.gemm_min_nk)});
        continue;
      }
      const std::vector<double> tail = settled(m.window_TFLOPs);
      const double rate = median_of(tail);
      const Spread s = relative_spread(tail, std::vector<double>(tail.size(), rate));
      std::string state;
      if (!m.window_sm_clock_MHz.empty())
        state += ", SM clock " + sig4(median_of(settled(m.window_sm_clock_MHz))) + " MHz";
      if (!m.window_power_W.empty()) state += ", board " + sig4(median_of(settled(m.window_power_W))) + " W";
      const std::size_t head = std::max<std::size_t>(1, m.window_TFLOPs.size() / 10);
      const double first = median_of(
          std::vector<double>(m.window_TFLOPs.begin(), m.window_TFLOPs.begin() + static_cast<std::ptrdiff_t>(head)));
      runs += (runs.empty() ? "" : "; ") + shape + " for " + sig4(m.seconds) + " s in " +
              std::to_string(m.window_TFLOPs.size()) + " windows: first tenth " + sig4(first) +
              " TFLOP/s, last quarter " + sig4(rate) + state;
      out.curves.push_back({curve, static_cast<int>(tail.size()), "settled " + sig4(rate) + " TFLOP/s" + state,
                            s.rms_rel, s.max_rel, "compute.gemm_power_limited_TFLOPs", ""});
      rates.push_back(rate);
      files.insert(f.file);
    }
  }
  if (rates.empty()) return out;
  const double rate = median_of(rates);
  const std::string path = "compute.gemm_power_limited_TFLOPs";
  const std::string note = implausible(rate, in.base.gpu.peak_bf16_TFLOPs.value, path, "TFLOP/s",
                                       "the profile's dense BF16 peak", out.warnings);
  if (!note.empty()) {
    for (auto& c : out.curves) {
      if (c.field == path) c.field.clear(), c.note = note;
    }
    return out;
  }
  const std::string source =
      "moesim fit: a BF16 GEMM back to back at the board's power limit (calibrate/pytorch/sustained_gemm.py), the "
      "median of the last quarter of its ~1 s windows (2MNK x GEMMs / window time); " +
      runs + "; measurements: " + in.provenance(files);
  out.updates.push_back(
      {{"compute", "gemm_power_limited_TFLOPs"}, fitted_quantity(rate, source), sig4(round_sig4(rate)) + " TFLOP/s"});
  return out;
}

}  // namespace moesim::fit
