#include "models/input/scenario.hpp"

#include <filesystem>
#include <map>
#include <mutex>

#include "models/arch/flops.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/input/overrides.hpp"
#include "models/plan/design_spec.hpp"

namespace moesim {

namespace fs = std::filesystem;

namespace {

// A sweep loads the same few files for every point: keep each parsed document, keyed by path
// and checked against the file's size and modification time.
struct CachedDocument {
  std::uintmax_t size = 0;
  fs::file_time_type mtime;
  nlohmann::json doc;
};
std::mutex g_cache_mutex;
std::map<std::string, CachedDocument> g_cache;

nlohmann::json read_json_cached(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto mtime = ec ? fs::file_time_type() : fs::last_write_time(path, ec);
  if (!ec) {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    const auto it = g_cache.find(path);
    if (it != g_cache.end() && it->second.size == size && it->second.mtime == mtime) return it->second.doc;
  }
  nlohmann::json doc = read_json_file(path);
  if (!ec) {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    g_cache[path] = {size, mtime, doc};
  }
  return doc;
}

}  // namespace

namespace {

// A section is either a path (relative to the scenario file) or an inline object.
nlohmann::json load_section(const JsonReader& scenario, const nlohmann::json& raw, std::string_view key,
                            SectionOrigin& origin) {
  const auto it = raw.find(std::string(key));
  if (it == raw.end()) scenario.fail(key, "required: a file path (relative to the scenario) or an inline object");
  scenario.has(key);  // mark as known
  if (it->is_string()) {
    const fs::path p = fs::path(scenario.file()).parent_path() / it->get<std::string>();
    origin = {p.lexically_normal().string(), ""};
    return read_json_cached(origin.file);
  }
  if (it->is_object()) {
    origin = {scenario.file(), std::string(key)};
    return *it;
  }
  scenario.fail(key, "expected a file path or an object, got " + brief(*it));
}

bool starts_with_path(const std::string& path, const std::string& prefix) {
  return path == prefix || (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
                            (path[prefix.size()] == '.' || path[prefix.size()] == '['));
}

}  // namespace

Scenario parse_composed(const nlohmann::json& doc, const std::string& scenario_file,
                        const SectionOrigin& arch, const SectionOrigin& plan, const SectionOrigin& hw) {
  Scenario s;
  s.file = scenario_file;
  s.arch = parse_architecture(JsonReader(doc.at("architecture"), arch.file, arch.prefix));
  s.plan = parse_plan(JsonReader(doc.at("plan"), plan.file, plan.prefix));
  s.hardware = parse_hardware_profile(JsonReader(doc.at("hardware"), hw.file, hw.prefix));
  validate_plan(s.plan, s.arch, plan.file, plan.prefix);
  const double node = s.hardware.node.gpus_per_node.value;
  if (static_cast<double>(s.plan.gpus_per_node) > node) {
    const std::string path = plan.prefix.empty() ? "gpus_per_node" : plan.prefix + ".gpus_per_node";
    throw InputError(plan.file, path, std::to_string(s.plan.gpus_per_node) + " GPUs per node exceeds the " +
                                          std::to_string(static_cast<long long>(node)) + " of hardware profile \"" +
                                          s.hardware.name + "\"", /*infeasible=*/true);
  }
  s.resolved = {{"architecture", doc.at("architecture")}, {"plan", doc.at("plan")}, {"hardware", doc.at("hardware")}};
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets) {
  return load_scenario_document(read_json_cached(path), path, sets);
}

Scenario load_scenario_document(const nlohmann::json& raw, const std::string& path,
                                const std::vector<std::string>& sets) {
  const JsonReader top(raw, path, "");
  SectionOrigin arch, plan, hw;
  nlohmann::json doc = nlohmann::json::object();
  doc["architecture"] = load_section(top, raw, "architecture", arch);
  doc["plan"] = load_section(top, raw, "plan", plan);
  doc["hardware"] = load_section(top, raw, "hardware", hw);
  const std::string name = top.string_or("name", fs::path(path).stem().string());
  top.string_or("description", "");
  std::string convention = top.string_or("flop_convention", std::string(kDefaultFlopConvention));
  const nlohmann::json sweep = top.has("sweep") ? raw.at("sweep") : nlohmann::json();
  const nlohmann::json compare = top.has("compare") ? raw.at("compare") : nlohmann::json();

  // Overrides: the scenario's own "set" object first, then the command line, in order.
  std::vector<std::pair<Override, std::string>> overrides;
  if (auto set_block = top.optional_object("set")) {
    for (const auto& [key, value] : raw.at("set").items()) {
      const std::string origin = path + ": set";
      Override o = parse_override(key + "=" + value.dump(), origin);
      overrides.emplace_back(std::move(o), origin);
    }
  }
  for (const auto& expr : sets) overrides.emplace_back(parse_override(expr, "--set"), "--set");
  top.finish();

  for (const auto& [o, origin] : overrides) {
    const auto& head = std::get<std::string>(o.path.front());
    const bool whole = o.path.size() == 1;
    if (head == "flop_convention" && whole) {
      if (!o.value.is_string()) throw InputError(origin, o.text, "flop_convention must be a string");
      convention = o.value.get<std::string>();
      continue;
    }
    if (head == "design" && whole) {
      if (!o.value.is_string()) throw InputError(origin, o.text, "design must be a string such as \"ddp+ep8\"");
      for (const auto& [path, value] : design_overrides(o.value.get<std::string>())) {
        apply_override(doc, parse_override(path + "=" + value.dump(), origin), origin);
      }
      continue;
    }
    if (head != "architecture" && head != "plan" && head != "hardware") {
      throw InputError(origin, o.text, "path must start with architecture, plan, hardware, design or flop_convention");
    }
    if (whole && o.value.is_string()) {
      // A whole input swapped for another file, found relative to the scenario.
      SectionOrigin& target = head == "architecture" ? arch : head == "plan" ? plan : hw;
      target = {(fs::path(path).parent_path() / o.value.get<std::string>()).lexically_normal().string(), ""};
      doc[head] = read_json_cached(target.file);
      continue;
    }
    apply_override(doc, o, origin);
  }
  try {
    flop_conventions().get(convention);
  } catch (const UnknownNameError& e) {
    throw InputError(path, "flop_convention", e.what());
  }

  try {
    Scenario s = parse_composed(doc, path, arch, plan, hw);
    s.name = name;
    s.flop_convention = convention;
    s.sweep = sweep;
    s.compare = compare;
    return s;
  } catch (const InputError& e) {
    // An error inside a value the user overrode points at the override, not at the file.
    std::string full = e.path();
    const std::pair<const SectionOrigin*, const char*> sections[] = {{&arch, "architecture"}, {&plan, "plan"}, {&hw, "hardware"}};
    for (const auto& [o, section] : sections) {
      const SectionOrigin& origin = *o;
      if (e.file() != origin.file) continue;
      if (origin.prefix.empty()) { full = e.path().empty() ? section : std::string(section) + "." + e.path(); break; }
      if (starts_with_path(e.path(), origin.prefix)) break;
    }
    for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
      if (starts_with_path(full, it->first.dotted)) {
        throw InputError(it->second, full, e.message() + " (value set by '" + it->first.text + "')", e.infeasible());
      }
    }
    throw;
  }
}

}  // namespace moesim
