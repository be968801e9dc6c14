#include "reports/sweep_report.hpp"

#include <sstream>
#include <string_view>

#include "models/common/units.hpp"
#include "reports/step_report.hpp"
#include "reports/text_format.hpp"

namespace moesim {

namespace {

nlohmann::json values_json(const PointOverrides& values) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [path, v] : values) out[path] = v;
  return out;
}

std::string csv_cell(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string values_text(const nlohmann::json& values, const char* sep) {
  std::string out;
  for (const auto& [path, v] : values.items()) out += (out.empty() ? "" : sep) + path + "=" + value_text(v);
  return out;
}

}  // namespace

nlohmann::json sweep_point_json(const SweepPoint& p) {
  nlohmann::json j = {{"index", p.index}, {"values", values_json(p.values)}, {"status", p.ok ? "ok" : "invalid"}};
  if (p.ok)
    j["result"] = step_json(*p.scenario, *p.result);
  else
    j["error"] = p.error;
  return j;
}

nlohmann::json sweep_document(const std::string& name, const SweepSpec& spec, nlohmann::json points) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : spec.axes) axes.push_back({{"path", a.path}, {"values", a.values}});
  std::size_t invalid = 0;
  for (const auto& p : points) invalid += p.at("status") == "ok" ? 0 : 1;
  const std::size_t total = points.size();
  return {{"schema", "moesim-sweep/1"},
          {"scenario", name},
          {"axes", axes},
          {"points", std::move(points)},
          {"summary", {{"points", total}, {"invalid", invalid}}}};
}

nlohmann::json sweep_json(const std::string& name, const SweepSpec& spec, const SweepResult& result) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : result.points) points.push_back(sweep_point_json(p));
  return sweep_document(name, spec, std::move(points));
}

std::string sweep_csv(const nlohmann::json& doc) {
  std::ostringstream os;
  static const char* kColumns[] = {"design",
                                   "hardware",
                                   "world",
                                   "params_total",
                                   "params_active",
                                   "flops_per_token",
                                   "flop_convention",
                                   "microbatches",
                                   "global_batch_tokens",
                                   "step_time_s",
                                   "tokens_per_s_per_gpu",
                                   "mfu",
                                   "peak_allocated_GiB",
                                   "peak_reserved_GiB",
                                   "device_total_GiB",
                                   "capacity_GiB",
                                   "oom",
                                   "breaking_phase",
                                   "in_flight_microbatches",
                                   "peak_phase"};
  // peak_phase, the phase where the worst stage's memory peaks, is the step document's
  // breaking_phase under the name the ledger uses; breaking_phase stays for existing readers.
  const auto key_of = [](const char* column) {
    return std::string_view(column) == "peak_phase" ? "breaking_phase" : column;
  };
  os << "index,values,status";
  for (const char* k : kColumns) os << "," << k;
  os << ",error\n";
  for (const auto& p : doc.at("points")) {
    const bool ok = p.at("status") == "ok";
    os << p.at("index").dump() << "," << csv_cell(values_text(p.at("values"), ";")) << "," << (ok ? "ok" : "invalid");
    for (const char* k : kColumns)
      os << "," << (ok ? csv_cell(value_text(p.at("result").at(key_of(k)))) : std::string());
    os << "," << (ok ? std::string() : csv_cell(p.at("error").get<std::string>())) << "\n";
  }
  return os.str();
}

std::string sweep_table(const nlohmann::json& doc) {
  std::ostringstream os;
  for (const auto& p : doc.at("points")) {
    os << "#" << p.at("index").dump() << "  " << values_text(p.at("values"), "  ") << "\n    ";
    if (p.at("status") != "ok") {
      os << "invalid: " << p.at("error").get<std::string>() << "\n";
      continue;
    }
    const auto& r = p.at("result");
    os << r.at("design").get<std::string>() << "  MFU " << fmt("%.1f%%", 100 * r.at("mfu").get<double>()) << "  "
       << fmt("%.0f", r.at("tokens_per_s_per_gpu").get<double>()) << " tok/s/GPU  step "
       << fmt("%.1f ms", 1e3 * r.at("step_time_s").get<double>()) << "  memory "
       << fmt("%.1f", r.at("device_total_GiB").get<double>()) << "/"
       << fmt("%.1f GiB", r.at("capacity_GiB").get<double>()) << " (" << r.at("breaking_phase").get<std::string>()
       << ")" << (r.at("oom").get<bool>() ? "  OOM" : "") << "\n";
  }
  return os.str();
}

nlohmann::json compare_json(const std::string& name, const CompareResult& result) {
  nlohmann::json designs = nlohmann::json::array();
  for (const auto& p : result.points.points) designs.push_back(sweep_point_json(p));
  nlohmann::json crossovers = nlohmann::json::array();
  for (const auto& c : result.crossovers) {
    nlohmann::json probes = nlohmann::json::array();
    for (const auto& [batch, mfu] : c.probes)
      probes.push_back({{"global_batch_tokens", batch}, {"ddp_mfu", mfu.first}, {"fsdp_mfu", mfu.second}});
    crossovers.push_back(
        {{"ddp_design", c.ddp_design},
         {"fsdp_design", c.fsdp_design},
         {"global_batch_tokens", c.global_batch_tokens ? nlohmann::json(*c.global_batch_tokens) : nlohmann::json()},
         {"probes", probes},
         {"note", c.note}});
  }
  nlohmann::json walls = nlohmann::json::array();
  for (const auto& w : result.walls) {
    walls.push_back(
        {{"design", w.design},
         {"largest_fitting_experts",
          w.largest_fitting_experts ? nlohmann::json(*w.largest_fitting_experts) : nlohmann::json()},
         {"first_oom_experts", w.first_oom_experts ? nlohmann::json(*w.first_oom_experts) : nlohmann::json()},
         {"note", w.note}});
  }
  return {{"schema", "moesim-compare/1"},
          {"scenario", name},
          {"designs", designs},
          {"batch_crossovers", crossovers},
          {"expert_walls", walls}};
}

std::string compare_table(const CompareResult& result) {
  std::ostringstream os;
  os << sweep_table(sweep_json("", SweepSpec{}, result.points));
  for (const auto& c : result.crossovers) {
    os << "crossover " << c.ddp_design << " vs " << c.fsdp_design << ": ";
    if (c.global_batch_tokens)
      os << c.ddp_design << " reaches " << c.fsdp_design << "'s MFU at a global batch of " << *c.global_batch_tokens
         << " tokens\n";
    else
      os << c.note << "\n";
  }
  for (const auto& w : result.walls) {
    os << "expert wall " << w.design << ": ";
    if (w.largest_fitting_experts) os << "largest N that fits " << *w.largest_fitting_experts;
    if (w.first_oom_experts) os << ", OOM at " << *w.first_oom_experts;
    if (!w.note.empty())
      os << (w.largest_fitting_experts ? " (" : "") << w.note << (w.largest_fitting_experts ? ")" : "");
    os << "\n";
  }
  return os.str();
}

}  // namespace moesim
