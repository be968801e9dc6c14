#include "calibrate/fit/attention_fit.hpp"

#include <map>
#include <set>

#include "calibrate/fit/least_squares.hpp"

namespace moesim::fit {

namespace {

struct Best {
  double rate = 0;  // TFLOP/s
  std::string backend;
};

// Per pass: for every shape the best backend's rate (the kernel a stack gets when it picks well;
// PyTorch 2.11's SDPA picks cuDNN on an H200), then the median over shapes. The cost model has one
// rate per pass, so the shapes' spread is the residual.
void fit_pass(const FitInputs& in, const std::string& pass, const char* field, FitOutput& out) {
  std::map<std::string, Best> best;                       // by shape
  std::map<std::string, std::vector<double>> by_backend;  // every shape's rate, per backend
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "attention" || m.direction != pass || !m.causal || m.check == "failed" || m.times_us.empty())
        continue;
      const double rate = m.flops / (m.median_us * 1e6);
      by_backend[m.method].push_back(rate);
      Best& b = best[m.shape];
      if (rate > b.rate) b = {rate, m.method};
      files.insert(f.file);
    }
  }
  if (best.empty()) return;
  std::vector<double> rates;
  std::map<std::string, int> winners;
  for (const auto& [shape, b] : best) {
    rates.push_back(b.rate);
    ++winners[b.backend];
  }
  const double rate = median_of(rates);
  const Spread s = relative_spread(rates, std::vector<double>(rates.size(), rate));
  const int n = static_cast<int>(rates.size());
  std::string per_backend, won;
  for (const auto& [backend, r] : by_backend) {
    const double mid = median_of(r);
    const Spread spread = relative_spread(r, std::vector<double>(r.size(), mid));
    per_backend += (per_backend.empty() ? "" : ", ") + backend + " " + sig4(mid);
    out.curves.push_back({"attention " + pass + " " + backend, static_cast<int>(r.size()),
                          "median " + sig4(mid) + " TFLOP/s", spread.rms_rel, spread.max_rel, "",
                          "per backend, not mapped"});
  }
  for (const auto& [backend, count] : winners)
    won += (won.empty() ? "" : ", ") + backend + " at " + std::to_string(count);
  const std::string path = std::string("compute.") + field;
  const std::string note = implausible(rate, in.base.gpu.peak_bf16_TFLOPs.value, path, "TFLOP/s",
                                       "the profile's dense BF16 peak", out.warnings);
  out.curves.push_back({"attention " + pass + " (best backend per shape)", n, "median " + sig4(rate) + " TFLOP/s",
                        s.rms_rel, s.max_rel, note.empty() ? path : "", note});
  if (!note.empty()) return;
  const std::string source =
      "moesim fit: causal BF16 flash attention, FLOPs (4 S^2 d per head, halved by the causal mask" +
      std::string(pass == "backward" ? ", x 2.5 backward" : "") + ") / median time, the best backend per shape (" +
      won + " of " + std::to_string(n) + " shapes), median over shapes; per backend: " + per_backend + "; " +
      residual_text(s.rms_rel, s.max_rel, n) + " (shapes against their median); measurements: " + in.provenance(files);
  out.updates.push_back({{"compute", field}, fitted_quantity(rate, source), sig4(round_sig4(rate)) + " TFLOP/s"});
}

}  // namespace

FitOutput fit_attention(const FitInputs& in) {
  FitOutput out;
  fit_pass(in, "forward", "attention_fwd_TFLOPs", out);
  fit_pass(in, "backward", "attention_bwd_TFLOPs", out);
  return out;
}

}  // namespace moesim::fit
