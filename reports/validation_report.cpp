#include "reports/validation_report.hpp"

#include <cmath>
#include <map>
#include <sstream>

#include "reports/text_format.hpp"

namespace moesim {

namespace {

std::string status_of(const ValidationRecord& rec) {
  if (!rec.error.empty()) return "error";
  if (rec.pass()) return rec.known_gap.empty() ? "pass" : "pass (documented gap closed)";
  return rec.known_gap.empty() ? "FAIL" : "known gap";
}

std::string unit_of(const std::string& metric) {
  if (metric.rfind("mfu", 0) == 0) return " pts";
  if (metric == "tokens_per_s_per_gpu") return " (rel)";
  return "";
}

}  // namespace

nlohmann::json validation_json(const ValidationReport& r) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& rec : r.records) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : rec.checks) {
      checks.push_back({{"metric", c.metric},
                        {"predicted", c.predicted},
                        {"measured", c.measured},
                        {"error", c.error},
                        {"tolerance", c.tolerance},
                        {"pass", c.pass}});
      if (c.range) checks.back()["measured_range"] = {c.measured_low, c.measured_high};
    }
    records.push_back({{"id", rec.id},
                       {"kind", rec.kind},
                       {"source", rec.source},
                       {"status", status_of(rec)},
                       {"known_gap", rec.known_gap},
                       {"error", rec.error},
                       {"checks", checks}});
  }
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [metric, s] : r.summary()) {
    summary[metric] = {{"checks", s.checks},
                       {"mean_abs_error", s.mean_abs_error},
                       {"max_abs_error", s.max_abs_error},
                       {"outside_tolerance", s.outside_tolerance}};
  }
  return {{"schema", "moesim-validation-report/1"},
          {"dataset", r.name},
          {"file", r.file},
          {"records", records},
          {"summary", summary},
          {"failures", r.failures()},
          {"known_gaps", r.known_gaps()},
          {"closed_gaps", r.closed_gaps()}};
}

std::string validation_table(const ValidationReport& r) {
  std::ostringstream os;
  os << "dataset " << r.name << " (" << r.file << ")\n";
  for (const auto& rec : r.records) {
    os << "  " << rec.id << "  [" << status_of(rec) << "]\n";
    if (!rec.error.empty()) os << "      error: " << rec.error << "\n";
    for (const auto& c : rec.checks) {
      const bool rel = c.metric == "tokens_per_s_per_gpu";
      os << "      " << c.metric << ": predicted " << fmt("%.4g", c.predicted) << ", published ";
      if (c.range) {
        // A range is met anywhere inside it: the distance to its nearer end, not to a midpoint.
        os << fmt("%.4g", c.measured_low) << "-" << fmt("%.4g", c.measured_high)
           << (c.error == 0  ? ", inside the range"
               : c.error > 0 ? ", above it by " + fmt("%.3g", c.error) + unit_of(c.metric)
                             : ", below it by " + fmt("%.3g", -c.error) + unit_of(c.metric));
      } else {
        os << fmt("%.4g", c.measured) << ", error "
           << (rel ? fmt("%+.1f%%", 100 * c.error) : fmt("%+.3g", c.error) + unit_of(c.metric));
      }
      os << " (tolerance " << (rel ? fmt("%.0f%%", 100 * c.tolerance) : fmt("%.3g", c.tolerance)) << ")"
         << (c.pass ? "" : "  <- outside") << "\n";
    }
    if (!rec.pass() && !rec.known_gap.empty()) os << "      documented gap: " << rec.known_gap << "\n";
  }
  os << "summary:\n";
  for (const auto& [metric, s] : r.summary()) {
    os << "  " << metric << ": " << s.checks << " checks, mean |error| " << fmt("%.3g", s.mean_abs_error)
       << ", max |error| " << fmt("%.3g", s.max_abs_error) << unit_of(metric) << ", " << s.outside_tolerance
       << " outside tolerance\n";
  }
  os << "records: " << r.records.size() << ", failures " << r.failures() << ", documented gaps " << r.known_gaps()
     << ", gaps closed " << r.closed_gaps() << "\n";
  return os.str();
}

std::string sensitivity_table(const std::vector<SensitivityRow>& rows, double fraction) {
  std::ostringstream os;
  const std::string minus = fmt("-%.0f%%", 100 * fraction), plus = fmt("+%.0f%%", 100 * fraction);
  const bool memory = !rows.empty() && rows.front().memory_checks > 0;
  os << "| assumption | value | mean abs MFU error (pts) " << minus << " / as is / " << plus << " | OOM verdicts right "
     << minus << " / as is / " << plus;
  if (memory) os << " | mean abs peak-memory error (%) " << minus << " / as is / " << plus;
  os << " |\n|---|---|---|---|" << (memory ? "---|" : "") << "\n";
  enum class Col { mfu, oom, memory };
  auto cell = [](const SensitivityRow& r, int i, Col c) {
    if (std::isnan(r.mean_mfu_error[i])) return std::string("out of range");
    if (c == Col::oom) return std::to_string(r.oom_right[i]);
    return c == Col::mfu ? fmt("%.2f", r.mean_mfu_error[i]) : fmt("%.1f", 100 * r.mean_memory_error[i]);
  };
  auto cells = [&](const SensitivityRow& r, Col c) {
    return cell(r, 0, c) + " / " + cell(r, 1, c) + " / " + cell(r, 2, c);
  };
  for (const auto& r : rows) {
    os << "| `" << r.path << "` | " << fmt("%g", r.value) << " | " << cells(r, Col::mfu) << " | " << cells(r, Col::oom)
       << " of " << r.oom_total;
    if (memory) os << " | " << cells(r, Col::memory);
    os << " |\n";
  }
  return os.str();
}

}  // namespace moesim
