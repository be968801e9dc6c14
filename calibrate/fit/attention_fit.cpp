#include "calibrate/fit/attention_fit.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "calibrate/fit/least_squares.hpp"

namespace moesim::fit {

namespace {

struct Best {
  double rate = 0;  // TFLOP/s
  std::string backend;
  std::int64_t seq_len = 0;
};

// attention_bench.py's SDPA backends as the profile's kernel names (models/common/cost_types.hpp
// AttentionKernel): PyTorch's FLASH_ATTENTION backend runs FlashAttention-2's kernels.
const std::map<std::string, AttentionKernel>& backend_kernels() {
  static const std::map<std::string, AttentionKernel> names = {{"cudnn", AttentionKernel::cudnn},
                                                               {"flash", AttentionKernel::flash_attn_2},
                                                               {"efficient", AttentionKernel::mem_efficient}};
  return names;
}

// Per pass, what the other kernels need beside the best one: each backend's median and spread.
struct BackendRates {
  std::map<std::string, double> median;
  std::map<std::string, std::string> source;
  std::string winner;  // the backend that won the most shapes
  std::string files;   // the measurements' provenance
};

// The best backend's rate by sequence length (the median over the shapes of each length), where
// the shapes cover two lengths or more: compute.<field>_by_seq_len.
void by_seq_len(const FitInputs& in, const std::string& pass, const char* field,
                const std::map<std::string, Best>& best, const std::set<std::string>& files, FitOutput& out) {
  std::map<std::int64_t, std::vector<double>> at;
  for (const auto& [shape, b] : best) at[b.seq_len].push_back(b.rate);
  const std::string key = std::string(field) + "_by_seq_len";
  if (at.size() < 2) {  // one length: no dependence measured, and a base's table would be stale
    const auto& c = in.base.compute;
    const auto& base = pass == "forward" ? c.attention_fwd_TFLOPs_by_seq_len : c.attention_bwd_TFLOPs_by_seq_len;
    if (base) out.updates.push_back({{"compute", key}, nullptr, "removed"});
    return;
  }
  std::vector<TablePoint> points;
  std::vector<double> measured, fitted;
  for (const auto& [len, rates] : at) {
    points.push_back({static_cast<double>(len), median_of(rates)});
    for (double r : rates) measured.push_back(r), fitted.push_back(points.back().y);
  }
  const Spread s = relative_spread(measured, fitted);
  const int n = static_cast<int>(measured.size());
  const std::string path = "compute." + key;
  out.curves.push_back({"attention " + pass + " by sequence length", n,
                        std::to_string(points.size()) + " lengths, median per length", s.rms_rel, s.max_rel, path, ""});
  const std::string source = "moesim fit: causal BF16 flash attention " + pass +
                             ", the best backend's rate per shape, median per tokens per sequence; " +
                             residual_text(s.rms_rel, s.max_rel, n) + " (shapes against their length's median); " +
                             "measurements: " + in.provenance(files);
  out.updates.push_back(
      {{"compute", key}, table_json("seq_len", "TFLOPs", points, source), std::to_string(points.size()) + " lengths"});
}

// Per pass: for every shape the best backend's rate (the kernel a stack gets when it picks well;
// PyTorch 2.11's SDPA picks cuDNN on an H200), then the median over shapes. The cost model has one
// rate per pass, so the shapes' spread is the residual.
BackendRates fit_pass(const FitInputs& in, const std::string& pass, const char* field, FitOutput& out) {
  BackendRates result;
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
      if (rate > b.rate) b = {rate, m.method, m.seq_len};
      files.insert(f.file);
    }
  }
  if (best.empty()) return result;
  result.files = in.provenance(files);
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
    const bool known = backend_kernels().contains(backend);
    out.curves.push_back({"attention " + pass + " " + backend, static_cast<int>(r.size()),
                          "median " + sig4(mid) + " TFLOP/s", spread.rms_rel, spread.max_rel,
                          known ? "compute.attention_by_kernel" : "",
                          known ? "this kernel's rate, for a stack that calls it" : "no kernel name for this backend"});
    result.median[backend] = mid;
    result.source[backend] = "moesim fit: causal BF16 " + backend + " attention (PyTorch SDPA backend), " + pass +
                             ", median over " + std::to_string(r.size()) + " shapes; " +
                             residual_text(spread.rms_rel, spread.max_rel, static_cast<int>(r.size()));
  }
  int most = 0;
  for (const auto& [backend, count] : winners) {
    won += (won.empty() ? "" : ", ") + backend + " at " + std::to_string(count);
    if (count > most) most = count, result.winner = backend;
  }
  const std::string path = std::string("compute.") + field;
  const std::string note = implausible(rate, in.base.gpu.peak_bf16_TFLOPs.value, path, "TFLOP/s",
                                       "the profile's dense BF16 peak", out.warnings);
  out.curves.push_back({"attention " + pass + " (best backend per shape)", n, "median " + sig4(rate) + " TFLOP/s",
                        s.rms_rel, s.max_rel, note.empty() ? path : "", note});
  if (!note.empty()) return {};
  const std::string source =
      "moesim fit: causal BF16 flash attention, FLOPs (4 S^2 d per head, halved by the causal mask" +
      std::string(pass == "backward" ? ", x 2.5 backward" : "") + ") / median time, the best backend per shape (" +
      won + " of " + std::to_string(n) + " shapes), median over shapes; per backend: " + per_backend + "; " +
      residual_text(s.rms_rel, s.max_rel, n) + " (shapes against their median); measurements: " + in.provenance(files);
  out.updates.push_back({{"compute", field}, fitted_quantity(rate, source), sig4(round_sig4(rate)) + " TFLOP/s"});
  by_seq_len(in, pass, field, best, files, out);
  return result;
}

}  // namespace

FitOutput fit_attention(const FitInputs& in) {
  FitOutput out;
  const BackendRates fwd = fit_pass(in, "forward", "attention_fwd_TFLOPs", out);
  const BackendRates bwd = fit_pass(in, "backward", "attention_bwd_TFLOPs", out);
  // The best-per-shape rates are the kernel that won most forward shapes (compute.attention_kernel);
  // every other backend measured in both passes gets its own rates (compute.attention_by_kernel).
  const auto winner = backend_kernels().find(fwd.winner);
  if (winner == backend_kernels().end()) return out;
  out.updates.push_back({{"compute", "attention_kernel"}, std::string(name_of(winner->second)), fwd.winner});
  for (auto& c : out.curves) {
    if (c.curve == "attention forward " + fwd.winner || c.curve == "attention backward " + fwd.winner) {
      c.field = "compute.attention_kernel";
      c.note = "the kernel the best-backend rates name";
    }
  }
  const auto& base_kernels = in.base.compute.attention_by_kernel;
  if (std::any_of(base_kernels.begin(), base_kernels.end(),
                  [&](const auto& k) { return k.kernel == winner->second; })) {
    // The base listed the winner as another kernel: its rates are now attention_*_TFLOPs.
    out.updates.push_back(
        {{"compute", "attention_by_kernel", std::string(name_of(winner->second))}, nullptr, "removed"});
  }
  for (const auto& [backend, kernel] : backend_kernels()) {
    if (backend == fwd.winner || !fwd.median.contains(backend) || !bwd.median.contains(backend)) continue;
    const std::string name(name_of(kernel));
    const std::string files = "; measurements: " + fwd.files;
    out.updates.push_back({{"compute", "attention_by_kernel", name, "fwd_TFLOPs"},
                           fitted_quantity(fwd.median.at(backend), fwd.source.at(backend) + files),
                           sig4(round_sig4(fwd.median.at(backend))) + " TFLOP/s"});
    out.updates.push_back({{"compute", "attention_by_kernel", name, "bwd_TFLOPs"},
                           fitted_quantity(bwd.median.at(backend), bwd.source.at(backend) + files),
                           sig4(round_sig4(bwd.median.at(backend))) + " TFLOP/s"});
  }
  return out;
}

}  // namespace moesim::fit
