#include "reports/sweep_report.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"
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

// The headline CSV columns after index, values and status, in order: fields of each point
// result.
const char* const kColumns[] = {"design",
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
const char* csv_key_of(const char* column) {
  return std::string_view(column) == "peak_phase" ? "breaking_phase" : column;
}

}  // namespace

std::string csv_cell(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json sweep_point_json(const SweepPoint& p) {
  nlohmann::json j = {{"index", p.index}, {"values", values_json(p.values)}, {"status", p.ok ? "ok" : "invalid"}};
  if (p.ok)
    j["result"] = step_json(*p.scenario, *p.result);
  else
    j["error"] = p.error;
  return j;
}

PointDetail parse_point_detail(const std::string& name) {
  if (name == "full") return PointDetail::full;
  if (name == "summary") return PointDetail::summary;
  const std::vector<std::string> allowed = {"summary", "full"};
  throw InputError("--detail", name, "unknown detail" + did_you_mean(name, allowed, "allowed: summary, full"));
}

nlohmann::json sweep_point_json(SweepPoint&& p, PointDetail detail) {
  if (!p.ok) return sweep_point_json(p);
  if (detail == PointDetail::summary) {
    p.scenario->resolved = nullptr;  // not copied into the step document, then dropped
    nlohmann::json j = sweep_point_json(p);
    j["result"].erase("inputs");
    return j;
  }
  if (detail == PointDetail::headline)
    return {{"index", p.index},
            {"values", values_json(p.values)},
            {"status", "ok"},
            {"result", step_headline_json(*p.scenario, *p.result)}};
  nlohmann::json inputs = std::move(p.scenario->resolved);  // step_json copies the null left behind
  nlohmann::json j = sweep_point_json(p);
  j["result"]["inputs"] = std::move(inputs);
  return j;
}

nlohmann::json sweep_summary(std::size_t points, std::size_t invalid) {
  return {{"points", points}, {"invalid", invalid}};
}

nlohmann::json sweep_axes_json(const SweepSpec& spec) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : spec.axes) axes.push_back({{"path", a.path}, {"values", a.values}});
  return axes;
}

nlohmann::json sweep_document(const std::string& name, const SweepSpec& spec, nlohmann::json points,
                              const nlohmann::json& inputs) {
  const nlohmann::json axes = sweep_axes_json(spec);
  std::size_t invalid = 0;
  for (const auto& p : points) invalid += p.at("status") == "ok" ? 0 : 1;
  const std::size_t total = points.size();
  nlohmann::json doc = {{"schema", "moesim-sweep/1"},
                        {"scenario", name},
                        {"axes", axes},
                        {"points", std::move(points)},
                        {"summary", sweep_summary(total, invalid)}};
  if (!inputs.is_null()) {
    doc["detail"] = "summary";
    doc["inputs"] = inputs;
  }
  return doc;
}

nlohmann::json sweep_json(const std::string& name, const SweepSpec& spec, const SweepResult& result) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : result.points) points.push_back(sweep_point_json(p));
  return sweep_document(name, spec, std::move(points));
}

std::vector<std::string> varied_paths(const SweepSpec& spec) {
  std::vector<std::string> paths;
  const auto add = [&](const std::string& path) {
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  };
  for (const auto& a : spec.axes) add(a.path);
  // In the order a point's "values" object lists them (by name), as sweep_csv reads a document.
  for (const auto& point : spec.include) {
    const nlohmann::json values = values_json(point);
    for (const auto& [path, value] : values.items()) add(path);
  }
  return paths;
}

std::vector<CsvValueColumn> csv_value_columns(const std::vector<std::string>& paths) {
  const auto last_key = [](const std::string& path) {
    const std::size_t dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
  };
  const auto headline = [](const std::string& name) {
    return name == "index" || name == "status" || name == "error" ||
           std::any_of(std::begin(kColumns), std::end(kColumns), [&](const char* c) { return name == c; });
  };
  std::vector<CsvValueColumn> out;
  for (const auto& path : paths) {
    std::string name = last_key(path);
    const bool shared = std::count_if(paths.begin(), paths.end(),
                                      [&](const std::string& other) { return last_key(other) == name; }) > 1;
    if (shared || headline(name)) name = path;
    if (headline(name)) name = "axis." + path;
    out.push_back({path, name});
  }
  return out;
}

std::string sweep_csv_header(const std::vector<CsvValueColumn>& columns) {
  std::string out = "index";
  for (const auto& c : columns) (out += ",") += csv_cell(c.name);
  out += ",status";
  for (const char* k : kColumns) (out += ",") += k;
  return out + ",error\n";
}

// Appended piece by piece to one string (a sweep writes a row per point; a string stream's setup
// cost more than the row's text).
std::string sweep_csv_row(const nlohmann::json& p, const std::vector<CsvValueColumn>& columns) {
  const bool ok = p.at("status") == "ok";
  std::string row = p.at("index").dump();
  const nlohmann::json& values = p.at("values");
  for (const auto& c : columns) {
    row += ',';
    const auto v = values.find(c.path);
    if (v != values.end()) row += csv_cell(json_value_text(*v));
  }
  row += ok ? ",ok" : ",invalid";
  const nlohmann::json* result = ok ? &p.at("result") : nullptr;
  for (const char* k : kColumns) {
    row += ',';
    if (result != nullptr) row += csv_cell(json_value_text(result->at(csv_key_of(k))));
  }
  row += ',';
  if (!ok) row += csv_cell(p.at("error").get<std::string>());
  row += '\n';
  return row;
}

std::string sweep_csv(const nlohmann::json& doc) {
  // The axes' paths, then paths only some points set (included points), in point order.
  std::vector<std::string> paths;
  for (const auto& a : doc.at("axes")) paths.push_back(a.at("path").get<std::string>());
  for (const auto& p : doc.at("points"))
    for (const auto& [path, value] : p.at("values").items())
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  const std::vector<CsvValueColumn> columns = csv_value_columns(paths);
  std::string out = sweep_csv_header(columns);
  for (const auto& p : doc.at("points")) out += sweep_csv_row(p, columns);
  return out;
}

nlohmann::json compare_json(const std::string& name, const CompareResult& result, nlohmann::json designs) {
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
          {"designs", std::move(designs)},
          {"batch_crossovers", crossovers},
          {"expert_walls", walls}};
}

}  // namespace moesim
