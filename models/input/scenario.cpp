#include "models/input/scenario.hpp"

#include <filesystem>

#include "models/arch/flops.hpp"
#include "models/common/json_reader.hpp"
#include "models/common/suggest.hpp"
#include "models/hw/profile_lookup.hpp"
#include "models/input/plan_section.hpp"
#include "models/plan/design_spec.hpp"

namespace moesim {

namespace fs = std::filesystem;

namespace {

// A section file's "$schema" (or an inline section's) is for editors: checked as a string, then
// dropped so that the resolved document reports hold only what was simulated.
nlohmann::json without_schema_key(nlohmann::json section, const SectionOrigin& origin) {
  if (section.is_object()) {
    JsonReader(section, origin.file, origin.prefix).string_or(kSchemaKey, "");
    section.erase(std::string(kSchemaKey));
  }
  return section;
}

// The file a section names, relative to the scenario file. The hardware may also name a bundled
// profile ("hardware": "h100-hgx"), as --profile does, when no such file lies beside the scenario;
// an unknown name is refused at `origin`'s `path` with the bundled names.
std::string section_file(const std::string& scenario_file, std::string_view key, const std::string& text,
                         const std::string& origin, const std::string& path) {
  const fs::path beside = (fs::path(scenario_file).parent_path() / text).lexically_normal();
  std::error_code ec;
  if (key == "hardware" && is_profile_name(text) && !fs::exists(beside, ec)) return resolve_profile(text, origin, path);
  return beside.string();
}

// A section is either a path (relative to the scenario file) or an inline object.
nlohmann::json load_section(const JsonReader& scenario, const nlohmann::json& raw, std::string_view key,
                            SectionOrigin& origin) {
  const auto it = raw.find(std::string(key));
  if (it == raw.end()) scenario.missing(key, "required: a file path (relative to the scenario) or an inline object");
  scenario.has(key);  // mark as known
  if (it->is_string()) {
    origin = {section_file(scenario.file(), key, it->get<std::string>(), scenario.file(), std::string(key)), ""};
    return without_schema_key(read_json_file(origin.file), origin);
  }
  if (it->is_object()) {
    origin = {scenario.file(), std::string(key)};
    return without_schema_key(*it, origin);
  }
  scenario.fail(key, "expected a file path or an object, got " + brief(*it));
}

// The first key of a change's path, which says what it changes.
const std::vector<std::string>& change_heads() {
  static const std::vector<std::string> heads = {"architecture",    "plan",       "hardware", "design",
                                                 "flop_convention", "cost_models"};
  return heads;
}

// A whole section swapped for a file (`--set hardware=FILE`, `--profile`): errors inside it name
// that file, not the change.
bool swaps_section(const Override& o) {
  const auto& head = std::get<std::string>(o.path.front());
  return o.path.size() == 1 && o.value.is_string() && (head == "architecture" || head == "plan" || head == "hardware");
}

// The models a scenario chooses by name ("cost_models" block, or cost_models.KEY=NAME).
std::string* cost_model_slot(CostModelChoice& choice, const std::string& key) {
  if (key == "gemm") return &choice.gemm;
  if (key == "grouped_gemm") return &choice.grouped_gemm;
  if (key == "attention") return &choice.attention;
  if (key == "memory") return &choice.memory;
  if (key == "collective") return &choice.collective;
  if (key == "resource_sharing") return &choice.resource_sharing;
  return nullptr;
}
const std::vector<std::string>& cost_model_keys() {
  static const std::vector<std::string> keys = {"gemm",   "grouped_gemm", "attention",
                                                "memory", "collective",   "resource_sharing"};
  return keys;
}

CostModelChoice parse_cost_models(const JsonReader& in) {
  CostModelChoice choice;
  for (const auto& key : cost_model_keys()) {
    std::string* slot = cost_model_slot(choice, key);
    *slot = in.string_or(key, *slot);
  }
  in.finish();
  return choice;
}

// Applies one change to the source's document (or its model choices) and records it for blame; a
// design records each plan field it expands to, still named by the design.
void apply_change(ScenarioInputs& s, const ScenarioChange& c) {
  const Override& o = c.change;
  const auto& head = std::get<std::string>(o.path.front());
  const bool whole = o.path.size() == 1;
  if (head == "flop_convention" && whole) {
    if (!o.value.is_string()) throw InputError(c.origin, o.text, "flop_convention must be a string");
    s.flop_convention = o.value.get<std::string>();
    return;
  }
  if (head == "cost_models" && o.path.size() == 2 && std::holds_alternative<std::string>(o.path[1])) {
    const std::string& kind = std::get<std::string>(o.path[1]);
    std::string* slot = cost_model_slot(s.cost_models, kind);
    if (slot == nullptr) {
      throw InputError(c.origin, o.text,
                       "unknown cost model kind \"" + kind + "\"" +
                           did_you_mean(kind, cost_model_keys(), "allowed: " + comma_joined(cost_model_keys())));
    }
    if (!o.value.is_string()) throw InputError(c.origin, o.text, "a cost model is chosen by its name (a string)");
    *slot = o.value.get<std::string>();
    return;
  }
  if (head == "design" && whole) {
    if (!o.value.is_string()) throw InputError(c.origin, o.text, "design must be a string such as \"ddp+ep8\"");
    const std::string design = o.value.get<std::string>();
    std::vector<std::pair<std::string, nlohmann::json>> expansion;
    try {
      expansion = design_overrides(design);
    } catch (const InputError& e) {
      throw InputError(c.origin, c.origin == kDesignOrigin ? design : o.text, e.message());
    }
    for (const auto& [path, value] : expansion) {
      Override field = override_of(path, value, c.origin);
      apply_override(s.doc, field, c.origin);
      field.text = c.origin == kDesignOrigin ? design : o.text;
      s.changes.push_back({std::move(field), c.origin});
    }
    return;
  }
  if (head != "architecture" && head != "plan" && head != "hardware") {
    throw InputError(c.origin, o.text,
                     "path must start with architecture, plan, hardware, design, flop_convention or cost_models" +
                         did_you_mean(head, change_heads()));
  }
  if (whole && o.value.is_string()) {
    // A whole input swapped for another file, found relative to the scenario.
    SectionOrigin& target = head == "architecture" ? s.arch : head == "plan" ? s.plan : s.hardware;
    target = {section_file(s.file, head, o.value.get<std::string>(), c.origin, o.text), ""};
    s.doc[head] = read_json_file(target.file);
    return;
  }
  apply_override(s.doc, o, c.origin);
}

// Every chosen cost model must be registered, and the resource-sharing policy one of those the
// engine implements (profile_cost_book.hpp).
void check_cost_models(const ScenarioInputs& src) {
  const CostModelChoice& c = src.cost_models;
  const auto check = [&](const char* key, auto&& lookup) {
    try {
      lookup();
    } catch (const UnknownNameError& e) {
      throw InputError(src.file, std::string("cost_models.") + key, e.what());
    }
  };
  check("gemm", [&] { gemm_cost_models().get(c.gemm); });
  check("grouped_gemm", [&] { grouped_gemm_cost_models().get(c.grouped_gemm); });
  check("attention", [&] { attention_cost_models().get(c.attention); });
  check("memory", [&] { memory_bound_cost_models().get(c.memory); });
  check("collective", [&] { collective_models().get(c.collective); });
  check("resource_sharing", [&] { resource_sharing_policy(c.resource_sharing); });
}

// `hardware`: the section already parsed, or null to parse it here. The document's sections move
// into the scenario's resolved copy once parsed (`src` is the caller's own copy).
Scenario parse_composed(ScenarioInputs& src, const HardwareProfile* hardware) {
  Scenario s;
  s.file = src.file;
  s.name = src.name;
  s.flop_convention = src.flop_convention;
  s.cost_models = src.cost_models;
  const nlohmann::json& doc = src.doc;
  thread_local SectionMemo<Architecture> architectures;
  thread_local SectionMemo<ParallelPlan> plans;
  const nlohmann::json& arch = doc.at("architecture");
  s.arch = architectures.get(arch, src.arch.file, src.arch.prefix,
                             [&] { return parse_architecture(JsonReader(arch, src.arch.file, src.arch.prefix)); });
  read_plan_section(s, doc.at("plan"), src.plan, &plans);
  s.hardware = hardware
                   ? *hardware
                   : parse_hardware_profile(JsonReader(doc.at("hardware"), src.hardware.file, src.hardware.prefix));
  check_plan_section(s, src.plan);
  nlohmann::json& sections = src.doc;
  s.resolved = {{"architecture", std::move(sections.at("architecture"))}, {"plan", std::move(sections.at("plan"))}};
  if (sections.contains("hardware")) s.resolved["hardware"] = std::move(sections.at("hardware"));
  return s;
}

// An error inside a value the user overrode points at the override, not at the file.
[[noreturn]] void blame(const InputError& e, const ScenarioInputs& src) {
  std::string full = e.path();
  const std::pair<const SectionOrigin*, const char*> sections[] = {
      {&src.arch, "architecture"}, {&src.plan, "plan"}, {&src.hardware, "hardware"}};
  for (const auto& [origin, section] : sections) {
    if (e.file() != origin->file) continue;
    if (origin->prefix.empty()) {
      full = e.path().empty() ? section : std::string(section) + "." + e.path();
      break;
    }
    if (starts_with_path(e.path(), origin->prefix)) break;
  }
  // An unknown key is the change's when the change wrote it, or wrote below it (a misspelt
  // section in `plan.expert_paralel.degree=8`).
  const bool unknown_key = dynamic_cast<const UnknownKeyError*>(&e) != nullptr;
  for (auto it = src.changes.rbegin(); it != src.changes.rend(); ++it) {
    if (swaps_section(it->change)) continue;
    const std::string& changed = it->change.dotted;
    if (starts_with_path(full, changed) || (unknown_key && starts_with_path(changed, full))) {
      throw InputError(it->origin, full, e.message() + " (value set by " + it->origin + " '" + it->change.text + "')",
                       e.infeasible());
    }
  }
  throw e;
}

}  // namespace

ScenarioSource read_scenario(const std::string& path, const std::vector<std::string>& sets) {
  return read_scenario_document(read_json_file(path), path, sets);
}

ScenarioSource read_scenario_document(const nlohmann::json& raw, const std::string& path,
                                      const std::vector<std::string>& sets) {
  const JsonReader top(raw, path, "");
  ScenarioSource source;
  ScenarioInputs& s = source.inputs;
  s.file = path;
  s.doc = nlohmann::json::object();
  s.doc["architecture"] = load_section(top, raw, "architecture", s.arch);
  s.doc["plan"] = load_section(top, raw, "plan", s.plan);
  s.doc["hardware"] = load_section(top, raw, "hardware", s.hardware);
  s.name = top.string_or("name", fs::path(path).stem().string());
  top.string_or("description", "");
  s.flop_convention = top.string_or("flop_convention", std::string(kDefaultFlopConvention));
  if (auto block = top.optional_object("cost_models")) s.cost_models = parse_cost_models(*block);
  if (auto block = top.optional_object("sweep")) source.sweep = parse_sweep_block(*block, raw.at("sweep"));
  if (auto block = top.optional_object("compare")) source.compare = parse_compare_block(*block, raw.at("compare"));

  // Overrides: the scenario's own "set" object first, then the command line, in order.
  std::vector<ScenarioChange> changes;
  if (auto set_block = top.optional_object("set")) {
    for (const auto& [key, value] : raw.at("set").items()) {
      const std::string origin = path + ": set";
      changes.push_back({parse_override(key + "=" + value.dump(), origin), origin});
    }
  }
  for (const auto& expr : sets) changes.push_back({parse_override(expr, "--set"), "--set"});
  top.finish();
  return with_changes(std::move(source), changes);
}

ScenarioSource with_changes(ScenarioSource source, const std::vector<ScenarioChange>& changes) {
  ScenarioInputs& s = source.inputs;
  for (const auto& c : changes) {
    apply_change(s, c);
    s.changes.push_back(c);
  }
  try {
    source.parsed_hardware = std::make_shared<const HardwareProfile>(
        parse_hardware_profile(JsonReader(s.doc.at("hardware"), s.hardware.file, s.hardware.prefix)));
  } catch (...) {
    source.parsed_hardware = nullptr;  // compose() parses the section again and reports the error as it always has
  }
  return source;
}

Scenario compose(const ScenarioSource& source, const std::vector<ScenarioChange>& changes, ResolvedRecord record) {
  return compose(source, {}, changes, record);
}

Scenario compose(const ScenarioSource& source, std::span<const PlanSet> plan_sets,
                 const std::vector<ScenarioChange>& changes, ResolvedRecord record) {
  bool hardware_changed = false;  // only a change whose path starts with "hardware" edits that section
  for (const auto& c : changes)
    hardware_changed = hardware_changed || std::get<std::string>(c.change.path.front()) == "hardware";
  // The parsed profile stands for an unchanged section; its document is copied only to be kept.
  const bool copy_hardware = hardware_changed || !source.parsed_hardware || record == ResolvedRecord::all_sections;
  ScenarioInputs src;
  if (copy_hardware) {
    src = source.inputs;
  } else {
    const ScenarioInputs& in = source.inputs;
    src = {in.file, in.name, in.flop_convention, in.cost_models, nlohmann::json::object(),
           in.arch, in.plan, in.hardware,        in.changes};
    src.doc["architecture"] = in.doc.at("architecture");
    src.doc["plan"] = in.doc.at("plan");
  }
  try {
    for (const PlanSet& set : plan_sets) write_plan_set(src.doc.at("plan"), set);
  } catch (const InputError& e) {
    throw InputError(src.plan.file, e.path(), e.message());
  }
  for (const auto& c : changes) {
    apply_change(src, c);
    src.changes.push_back(c);
  }
  try {
    flop_conventions().get(src.flop_convention);
  } catch (const UnknownNameError& e) {
    throw InputError(src.file, "flop_convention", e.what());
  }
  try {
    check_cost_models(src);
    return parse_composed(src, hardware_changed ? nullptr : source.parsed_hardware.get());
  } catch (const InputError& e) {
    try {
      blame(e, src);
    } catch (const InputError& blamed) {
      if (plan_sets.empty()) throw;
      throw from_the_top(blamed, src.plan);
    }
  }
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets) {
  return compose(read_scenario(path, sets));
}

std::vector<ScenarioChange> changes_of(const PointOverrides& point, const std::string& origin) {
  std::vector<ScenarioChange> out;
  for (const auto& [path, value] : point) {
    // A study's design point comes from a design list (compare --design, a design axis).
    const std::string who = path == "design" && origin == "--set" ? std::string(kDesignOrigin) : origin;
    out.push_back({override_of(path, value, who), who});
  }
  return out;
}

}  // namespace moesim
