// The input JSON Schemas (schemas/) accept every bundled input, and name exactly the keys the
// parsers accept: each closed object of a bundled input gets one unknown key, and the parser's
// unknown-key error lists what that object allows, which must be the schema's property names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include "calibrate/fit/measurements.hpp"
#include "models/arch/architecture.hpp"
#include "models/common/json_reader.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/plan/parallel_plan.hpp"
#include "studies/measured_runs.hpp"
#include "tests/reports/schema_checker.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kArchitecture = "moesim-architecture.schema.json";
const std::string kPlan = "moesim-plan.schema.json";
const std::string kProfile = "moesim-hardware-profile.schema.json";
const std::string kScenario = "moesim-scenario.schema.json";
const std::string kMeasurements = "moesim-measurements.schema.json";
const std::string kRuns = "moesim-runs.schema.json";
const std::string kProbe = "zz_schema_probe";

const test::SchemaChecker& checker() {
  static const test::SchemaChecker c(test::source_path("schemas"));
  return c;
}

// Which schema a file under scenarios/ follows, by what it holds ("" for a validation dataset).
std::string schema_of_scenario_file(const json& doc) {
  if (doc.contains("records")) return "";
  if (doc.contains("runs")) return kRuns;
  if (doc.contains("num_layers")) return kArchitecture;
  if (doc.contains("design")) return kPlan;
  if (doc.contains("architecture")) return kScenario;
  return "unclassified";
}

std::vector<std::string> json_files(const std::string& folder, bool recursive) {
  std::vector<std::string> out;
  const auto add = [&out](const fs::directory_entry& e) {
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().string());
  };
  if (recursive)
    for (const auto& e : fs::recursive_directory_iterator(test::source_path(folder))) add(e);
  else
    for (const auto& e : fs::directory_iterator(test::source_path(folder))) add(e);
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Measurement files: the fuzz seeds, plus records of the kinds they lack (copies of a record of
// the same family under the other kind's name), so every kind's keys are probed.
std::vector<std::pair<std::string, json>> measurement_documents() {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& f : json_files("fuzz/corpus/measurements", false)) out.emplace_back(f, read_json_file(f));
  json widened = read_json_file(test::source_path("fuzz/corpus/measurements/synthetic-node-8xb300.json"));
  const std::pair<const char*, const char*> copies[] = {
      {"all_reduce", "all_reduce_bucketed"}, {"all_reduce", "send_recv"}, {"memcpy_d2d", "grad_accum_bf16_to_fp32"}};
  for (const auto& [from, to] : copies) {
    for (const auto& m : json(widened["measurements"])) {
      if (m["kind"] != from) continue;
      json copy = m;
      copy["kind"] = to;
      widened["measurements"].push_back(copy);
      break;
    }
  }
  out.emplace_back("widened-measurements.json", widened);
  return out;
}

// The schema node for `s` with its "$ref" followed (one level, as the schemas use it).
json resolved(const json& s, const std::string& schema_id) {
  if (!s.contains("$ref")) return s;
  const std::string ref = s.at("$ref").get<std::string>();
  const auto hash = ref.find('#');
  const std::string id = hash == 0 ? schema_id : ref.substr(0, hash);
  const std::string pointer = hash == std::string::npos ? "" : ref.substr(hash + 1);
  json out = checker().schema(id).at(json::json_pointer(pointer));
  for (const auto& [k, v] : s.items()) {
    if (k != "$ref" && k != "properties") out[k] = v;
  }
  return out;
}

struct Probe {
  std::string pointer;                // the object probed, in the document
  std::set<std::string> schema_keys;  // its schema's property names
  std::set<std::string> parser_keys;  // what the parser's unknown-key error allows there
};

using Parse = std::function<void(const json&)>;

// Walks `doc` with its schema; every object the schema closes (additionalProperties false) gets
// the probe key and is parsed.
void probe_objects(const json& root, const json& node, const json& schema, const std::string& schema_id,
                   const std::string& pointer, const Parse& parse, std::vector<Probe>& out) {
  const json s = resolved(schema, schema_id);
  if (node.is_object() && s.value("additionalProperties", json(true)) == false && s.contains("properties")) {
    Probe p{pointer, {}, {}};
    for (const auto& [k, v] : s.at("properties").items()) p.schema_keys.insert(k);
    json probed = root;
    probed[json::json_pointer(pointer)][kProbe] = 0;
    try {
      parse(probed);
      FAIL("the parser accepted the probe key at " << pointer);
    } catch (const UnknownKeyError& e) {
      INFO(e.what());
      REQUIRE(e.path().size() >= kProbe.size());
      REQUIRE(e.path().substr(e.path().size() - kProbe.size()) == kProbe);
      p.parser_keys.insert(e.allowed().begin(), e.allowed().end());
    }
    out.push_back(p);
  }
  if (node.is_object() && s.contains("properties")) {
    for (const auto& [k, v] : node.items()) {
      if (s.at("properties").contains(k))
        probe_objects(root, v, s.at("properties").at(k), schema_id, pointer + "/" + k, parse, out);
    }
  }
  if (node.is_array() && s.contains("items")) {
    for (std::size_t i = 0; i < node.size(); ++i)
      probe_objects(root, node[i], s.at("items"), schema_id, pointer + "/" + std::to_string(i), parse, out);
  }
}

std::vector<Probe> probes(const json& doc, const std::string& schema_id, const Parse& parse) {
  std::vector<Probe> out;
  probe_objects(doc, doc, checker().schema(schema_id), schema_id, "", parse, out);
  return out;
}

Parse section_parser(const std::string& schema_id, const std::string& file) {
  if (schema_id == kArchitecture) return [file](const json& d) { parse_architecture(JsonReader(d, file, "")); };
  if (schema_id == kPlan) return [file](const json& d) { parse_plan(JsonReader(d, file, "")); };
  if (schema_id == kProfile) return [file](const json& d) { parse_hardware_profile(JsonReader(d, file, "")); };
  if (schema_id == kRuns) return [file](const json& d) { parse_runs(d, file, {}); };
  return [file](const json& d) { compose(read_scenario_document(d, file, {})); };
}

}  // namespace

TEST_CASE("The input schemas are draft 2020-12 and each names its file", "[unit]") {
  for (const auto& id : {kArchitecture, kPlan, kProfile, kScenario, kMeasurements, kRuns}) {
    INFO(id);
    const json& s = checker().schema(id);
    CHECK(s["$schema"] == "https://json-schema.org/draft/2020-12/schema");
    CHECK(fs::exists(test::source_path("schemas/" + id)));
    CHECK(s["properties"].contains("$schema"));  // every input may name its schema
  }
}

TEST_CASE("Every bundled input validates against its schema", "[unit]") {
  std::size_t checked = 0;
  for (const auto& f : json_files("scenarios", true)) {
    const json doc = read_json_file(f);
    const std::string id = schema_of_scenario_file(doc);
    INFO(f);
    REQUIRE(id != "unclassified");
    if (id.empty()) continue;
    CHECK(joined(checker().check(doc, id)) == "");
    ++checked;
  }
  for (const auto& f : json_files("hardware_profiles", false)) {
    INFO(f);
    CHECK(joined(checker().check(read_json_file(f), kProfile)) == "");
    ++checked;
  }
  for (const auto& [f, doc] : measurement_documents()) {
    INFO(f);
    CHECK(joined(checker().check(doc, kMeasurements)) == "");
    ++checked;
  }
  CHECK(checked >= 30);
}

TEST_CASE("The input schemas refuse what the parsers refuse", "[unit]") {
  json plan = read_json_file(test::source_path("scenarios/plans/ddp-1node.json"));
  CHECK(checker().check(plan, kPlan).empty());
  plan["expert_paralel"] = {{"degree", 8}};
  CHECK(joined(checker().check(plan, kPlan)) == "/: key 'expert_paralel' is not allowed\n");
  json arch = read_json_file(test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json"));
  arch["d_model"] = 0;
  CHECK(joined(checker().check(arch, kArchitecture)) == "/d_model: 0 is below the minimum 1\n");
  json profile = read_json_file(test::source_path("hardware_profiles/b300-hgx.json"));
  profile["memory"]["fragmentation_fraction"].erase("source");
  CHECK(joined(checker().check(profile, kProfile)) ==
        "/memory/fragmentation_fraction: missing required key 'source'\n");
}

TEST_CASE("Each schema object names exactly the keys its parser accepts", "[unit]") {
  std::size_t compared = 0;
  const auto compare = [&compared](const std::vector<Probe>& found, const std::string& file) {
    for (const auto& p : found) {
      INFO(file << " " << (p.pointer.empty() ? "/" : p.pointer));
      CHECK(p.schema_keys == p.parser_keys);
      ++compared;
    }
  };
  for (const auto& f : json_files("scenarios", true)) {
    const json doc = read_json_file(f);
    const std::string id = schema_of_scenario_file(doc);
    if (!id.empty()) compare(probes(doc, id, section_parser(id, f)), f);
  }
  for (const auto& f : json_files("hardware_profiles", false))
    compare(probes(read_json_file(f), kProfile, section_parser(kProfile, f)), f);
  // A measurement record's keys depend on its kind: each kind's are among the schema's, and
  // together they are all of them.
  std::set<std::string> record_keys, schema_record_keys;
  for (const auto& [f, doc] : measurement_documents()) {
    const std::string file = f;
    for (const auto& p : probes(doc, kMeasurements, [file](const json& d) { fit::parse_measurements(d, file); })) {
      INFO(f << " " << p.pointer);
      if (p.pointer.rfind("/measurements/", 0) != 0) {
        CHECK(p.schema_keys == p.parser_keys);
        ++compared;
        continue;
      }
      for (const auto& k : p.parser_keys) CHECK(p.schema_keys.count(k) == 1);
      record_keys.insert(p.parser_keys.begin(), p.parser_keys.end());
      schema_record_keys = p.schema_keys;
    }
  }
  CHECK(record_keys == schema_record_keys);
  CHECK(compared >= 200);
}
