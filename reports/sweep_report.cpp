#include "reports/sweep_report.hpp"

#include <sstream>

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

nlohmann::json point_json(const SweepPoint& p) {
  nlohmann::json j = {{"index", p.index}, {"values", values_json(p.values)}, {"status", p.ok ? "ok" : "invalid"}};
  if (p.ok) j["result"] = step_json(*p.scenario, *p.result);
  else j["error"] = p.error;
  return j;
}

std::string csv_cell(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

nlohmann::json sweep_json(const std::string& name, const SweepSpec& spec, const SweepResult& result) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : spec.axes) axes.push_back({{"path", a.path}, {"values", a.values}});
  nlohmann::json points = nlohmann::json::array();
  std::size_t invalid = 0;
  for (const auto& p : result.points) {
    points.push_back(point_json(p));
    invalid += p.ok ? 0 : 1;
  }
  return {{"schema", "moesim-sweep/1"}, {"scenario", name}, {"axes", axes}, {"points", points},
          {"summary", {{"points", result.points.size()}, {"invalid", invalid}}}};
}

std::string sweep_csv(const SweepResult& result) {
  std::ostringstream os;
  os << "index,values,status,design,hardware,world,params_total,params_active,flops_per_token,flop_convention,microbatches,"
        "global_batch_tokens,step_time_s,tokens_per_s_per_gpu,mfu,peak_allocated_GiB,peak_reserved_GiB,device_total_GiB,"
        "capacity_GiB,oom,breaking_phase,error\n";
  for (const auto& p : result.points) {
    std::string values;
    for (const auto& [path, v] : p.values) values += (values.empty() ? "" : ";") + path + "=" + value_text(v);
    os << p.index << "," << csv_cell(values) << "," << (p.ok ? "ok" : "invalid") << ",";
    if (p.ok) {
      const nlohmann::json j = step_json(*p.scenario, *p.result);
      for (const char* k : {"design", "hardware", "world", "params_total", "params_active", "flops_per_token", "flop_convention",
                            "microbatches", "global_batch_tokens", "step_time_s", "tokens_per_s_per_gpu", "mfu", "peak_allocated_GiB",
                            "peak_reserved_GiB", "device_total_GiB", "capacity_GiB", "oom", "breaking_phase"}) {
        os << csv_cell(value_text(j.at(k))) << ",";
      }
      os << "\n";
    } else {
      os << ",,,,,,,,,,,,,,,,,," << csv_cell(p.error) << "\n";
    }
  }
  return os.str();
}

std::string sweep_table(const SweepResult& result) {
  std::ostringstream os;
  for (const auto& p : result.points) {
    std::string values;
    for (const auto& [path, v] : p.values) values += (values.empty() ? "" : "  ") + path + "=" + value_text(v);
    os << "#" << p.index << "  " << values << "\n    ";
    if (!p.ok) {
      os << "invalid: " << p.error << "\n";
      continue;
    }
    const StepResult& r = *p.result;
    const auto& worst = r.ledger.stages[r.ledger.worst_stage];
    os << r.design << "  MFU " << fmt("%.1f%%", 100 * r.mfu) << "  " << fmt("%.0f", r.tokens_per_s_per_gpu) << " tok/s/GPU  step "
       << fmt("%.1f ms", r.step_time_s * 1e3) << "  memory " << fmt("%.1f", worst.device_total / kGiB) << "/"
       << fmt("%.1f GiB", worst.capacity / kGiB) << (r.ledger.oom ? "  OOM" : "") << "\n";
  }
  return os.str();
}

nlohmann::json compare_json(const std::string& name, const CompareResult& result) {
  nlohmann::json designs = nlohmann::json::array();
  for (const auto& p : result.points.points) designs.push_back(point_json(p));
  nlohmann::json crossovers = nlohmann::json::array();
  for (const auto& c : result.crossovers) {
    nlohmann::json probes = nlohmann::json::array();
    for (const auto& [batch, mfu] : c.probes) probes.push_back({{"global_batch_tokens", batch}, {"ddp_mfu", mfu.first}, {"fsdp_mfu", mfu.second}});
    crossovers.push_back({{"ddp_design", c.ddp_design}, {"fsdp_design", c.fsdp_design},
                          {"global_batch_tokens", c.global_batch_tokens ? nlohmann::json(*c.global_batch_tokens) : nlohmann::json()},
                          {"probes", probes}, {"note", c.note}});
  }
  nlohmann::json walls = nlohmann::json::array();
  for (const auto& w : result.walls) {
    walls.push_back({{"design", w.design},
                     {"largest_fitting_experts", w.largest_fitting_experts ? nlohmann::json(*w.largest_fitting_experts) : nlohmann::json()},
                     {"first_oom_experts", w.first_oom_experts ? nlohmann::json(*w.first_oom_experts) : nlohmann::json()},
                     {"note", w.note}});
  }
  return {{"schema", "moesim-compare/1"}, {"scenario", name}, {"designs", designs}, {"batch_crossovers", crossovers}, {"expert_walls", walls}};
}

std::string compare_table(const CompareResult& result) {
  std::ostringstream os;
  os << sweep_table(result.points);
  for (const auto& c : result.crossovers) {
    os << "crossover " << c.ddp_design << " vs " << c.fsdp_design << ": ";
    if (c.global_batch_tokens) os << c.ddp_design << " reaches " << c.fsdp_design << "'s MFU at a global batch of " << *c.global_batch_tokens << " tokens\n";
    else os << c.note << "\n";
  }
  for (const auto& w : result.walls) {
    os << "expert wall " << w.design << ": ";
    if (w.largest_fitting_experts) os << "largest N that fits " << *w.largest_fitting_experts;
    if (w.first_oom_experts) os << ", OOM at " << *w.first_oom_experts;
    if (!w.note.empty()) os << (w.largest_fitting_experts ? " (" : "") << w.note << (w.largest_fitting_experts ? ")" : "");
    os << "\n";
  }
  return os.str();
}

}  // namespace moesim
