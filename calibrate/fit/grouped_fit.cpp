#include "calibrate/fit/grouped_fit.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "calibrate/fit/least_squares.hpp"
#include "models/costs/compute_costs.hpp"

namespace moesim::fit {

namespace {

// Published grouped/dense and per-pass ratios lie in (0, 1.5] (models/hw/profile_sections.cpp).
constexpr double kMaxRatio = 1.5;

struct PassTable {
  const char* layout;
  const char* field;  // under compute
  const char* y_key;
  std::string over;  // what the rate is divided by, for the source
};

// Per shape and x the faster method's rate over `forward(x, total rows)` (a framework picks the
// faster kernel), then per x the median over shapes. Returns the table when it was written.
std::optional<ProfileTable> fit_pass(const FitInputs& in, const PassTable& pass,
                                     const std::function<double(double, double)>& forward, FitOutput& out) {
  std::map<double, std::map<std::string, double>> best;  // x -> shape -> ratio
  std::set<std::string> files;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "grouped_gemm" || m.check == "failed" || m.zipf_s != 0 || m.layout != pass.layout) continue;
      double total = 0;
      for (auto r : m.rows_per_expert) total += static_cast<double>(r);
      if (total <= 0) continue;
      const double fixed = m.m == 0 ? static_cast<double>(m.n) * m.k : static_cast<double>(m.m) * m.n;
      const double x = round_sig(total / static_cast<double>(m.rows_per_expert.size()), 6);
      const double rate = 2.0 * total * fixed / (m.median_us * 1e6);  // FLOP / us -> TFLOP/s
      double& ratio = best[x][m.label];
      ratio = std::max(ratio, rate / forward(x, total));
      files.insert(f.file);
    }
  }
  if (best.empty()) return std::nullopt;
  ProfileTable table;
  std::vector<double> values, refs;
  for (const auto& [x, shapes] : best) {
    std::vector<double> ratios;
    for (const auto& [shape, r] : shapes) ratios.push_back(r);
    table.add({x, median_of(ratios)});
    for (double r : ratios) values.push_back(r), refs.push_back(table.points().back().y);
  }
  const Spread s = relative_spread(values, refs);
  const int n = static_cast<int>(values.size());
  const std::size_t points = table.points().size();
  std::string note;
  for (const auto& p : table.points())
    if (!(p.y > 0 && p.y <= kMaxRatio)) note = "not mapped: ratio " + sig4(p.y) + " outside (0, 1.5]";
  const std::string field = std::string("compute.") + pass.field;
  out.curves.push_back({std::string("grouped GEMM ") + pass.layout + " / " +
                            (std::string(pass.layout) == "fwd" ? "dense" : "forward") + " by rows per expert",
                        n, std::to_string(points) + " points, median per x", s.rms_rel, s.max_rel,
                        note.empty() ? field : "", note});
  if (!note.empty()) return std::nullopt;
  const std::string source = std::string("moesim fit: uniform-routing grouped ") + pass.layout +
                             " GEMM rate (2 x rows x fixed dims / median time, best method per shape) / " + pass.over +
                             ", by mean rows per expert, median over shapes; " +
                             residual_text(s.rms_rel, s.max_rel, n) +
                             " (shapes against their median); measurements: " + in.provenance(files);
  out.updates.push_back({{"compute", pass.field},
                         table_json("rows_per_expert", pass.y_key, table.points(), source),
                         std::to_string(points) + " points"});
  table.kind = SourceKind::fitted;
  return table;
}

}  // namespace

void fit_grouped(const FitInputs& in, const DenseForward& dense, FitOutput& out) {
  const std::string dense_text =
      std::string(dense.fitted ? "the fitted" : "the base profile's") + " dense table at the same total rows";
  const auto efficiency = fit_pass(
      in, {"fwd", "grouped_gemm_efficiency_by_rows_per_expert", "fraction_of_dense", dense_text},
      [&](double, double total) { return interpolate_log_x(dense.table, total); }, out);
  const ProfileTable& eff = efficiency ? *efficiency : in.base.compute.grouped_gemm_efficiency_by_rows_per_expert;
  // A backward pass over the forward rate the cost model gives the same routing.
  const std::string forward_text = std::string("(") + (efficiency ? "the fitted" : "the base profile's") +
                                   " grouped efficiency at the rows per expert x " + dense_text + ")";
  auto forward = [&](double x, double total) {
    return interpolate_log_x(eff, x) * interpolate_log_x(dense.table, total);
  };
  fit_pass(in, {"dgrad", "grouped_gemm_dgrad_over_forward_by_rows_per_expert", "fraction_of_forward", forward_text},
           forward, out);
  fit_pass(in, {"wgrad", "grouped_gemm_wgrad_over_forward_by_rows_per_expert", "fraction_of_forward", forward_text},
           forward, out);
}

}  // namespace moesim::fit
