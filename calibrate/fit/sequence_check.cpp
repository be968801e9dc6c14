#include "calibrate/fit/sequence_check.hpp"

#include <cstdio>
#include <map>
#include <sstream>

#include "calibrate/fit/compute_fit.hpp"
#include "models/costs/compute_costs.hpp"

namespace moesim::fit {

namespace {

GemmPass pass_of(const std::string& layout) {
  if (layout == "dgrad") return GemmPass::dgrad;
  if (layout == "wgrad") return GemmPass::wgrad;
  return GemmPass::forward;
}

// Seconds the cost model gives one kernel of the sequence. The harness's layouts are the cost
// model's shapes: fwd and dgrad (M tokens, N, K), wgrad (M out features, N, K tokens); a grouped
// GEMM's two fixed dimensions are (N, K) with rows in M, (M, N) with rows in K (wgrad).
double model_seconds(const HardwareProfile& hw, const SequenceKernel& k, const std::vector<double>& rows) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  if (k.op == "gemm") {
    return gemm_cost_models().get(kDefaultGemmCost).time(hw, {d(k.m), d(k.n), d(k.k), pass_of(k.layout)}).time_s;
  }
  if (k.op == "grouped_gemm") {
    const bool rows_in_k = k.k == 0;
    const GroupedGemmShape shape{rows, rows_in_k ? d(k.m) : d(k.n), rows_in_k ? d(k.n) : d(k.k), pass_of(k.layout)};
    return grouped_gemm_cost_models().get(kDefaultGroupedGemmCost).time(hw, shape).time_s;
  }
  return memory_bound_cost_models().get(kDefaultMemoryBoundCost).time(hw, d(k.bytes), memory_class_of(k.op)).time_s;
}

}  // namespace

std::vector<SequenceCheck> check_sequences(const std::vector<MeasurementFile>& files, const HardwareProfile& fitted) {
  std::vector<SequenceCheck> out;
  for (const auto& f : files) {
    for (const auto& m : f.measurements) {
      if (m.kind != "sequence" || m.check == "failed") continue;
      const std::vector<double> rows(m.rows_per_expert.begin(), m.rows_per_expert.end());
      SequenceCheck c{f.file, m.label, m.block, {}, {}, m.median_us, 0, 0, 0};
      std::map<std::string, std::size_t> phase_index, op_index;
      const auto add = [](std::vector<SequencePart>& parts, std::map<std::string, std::size_t>& index,
                          const std::string& key, double measured, double model) {
        auto [it, fresh] = index.emplace(key, parts.size());
        if (fresh) parts.push_back({key});
        SequencePart& p = parts[it->second];
        ++p.kernels;
        p.measured_us += measured;
        p.model_us += model;
      };
      for (const auto& k : m.kernels) {
        if (k.median_us <= 0) {
          ++c.untimed;
          continue;
        }
        const double model_us = 1e6 * model_seconds(fitted, k, rows);
        add(c.phases, phase_index, k.phase, k.median_us, model_us);
        add(c.ops, op_index, k.method.empty() ? k.op : k.op + " " + k.method, k.median_us, model_us);
        c.kernels_sum_us += k.median_us;
        c.model_us += model_us;
      }
      if (!c.phases.empty()) out.push_back(std::move(c));
    }
  }
  return out;
}

std::string format_sequence_checks(const std::vector<SequenceCheck>& checks) {
  if (checks.empty()) return "";
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-48s %8s %12s %12s %9s\n", "sequence (one microbatch, one block)", "kernels",
                "measured us", "model us", "model/meas");
  os << line;
  const auto row = [&](const std::string& what, int kernels, double measured, double model) {
    std::snprintf(line, sizeof line, "%-48s %8d %12.1f %12.1f %9.3f\n", what.c_str(), kernels, measured, model,
                  model / measured);
    os << line;
  };
  std::string file;
  for (const auto& c : checks) {
    if (c.file != file) os << c.file << "\n";
    file = c.file;
    int kernels = 0;
    for (const auto& p : c.phases) {
      row(c.label + " " + p.part, p.kernels, p.measured_us, p.model_us);
      kernels += p.kernels;
    }
    for (const auto& p : c.ops) row("  " + p.part, p.kernels, p.measured_us, p.model_us);
    row(c.label + " kernels alone", kernels, c.kernels_sum_us, c.model_us);
    row(c.label + " whole sequence", kernels, c.whole_us, c.model_us);
    if (c.untimed > 0) os << "  (" << c.untimed << " kernels untimed by the budget, left out)\n";
  }
  os << "(the cost model on the fitted profile, per kernel as the simulator prices it; attention, elementwise and\n"
        " communication kernels are not in the sequence: calibrate/harness/README.md, \"sequence\")\n";
  return os.str();
}

}  // namespace moesim::fit
