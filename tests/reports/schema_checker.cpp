#include "tests/reports/schema_checker.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace moesim::test {

namespace {

// JSON Schema's types: "integer" is any number with no fractional part (4096.0 counts).
bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  throw std::invalid_argument("schema names an unknown type '" + type + "'");
}

}  // namespace

SchemaChecker::SchemaChecker(const std::string& folder) {
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 12 || name.substr(name.size() - 12) != ".schema.json") continue;
    std::ifstream in(entry.path());
    nlohmann::json s = nlohmann::json::parse(in);
    const std::string id = s.at("$id").get<std::string>();
    schemas_[id] = std::move(s);
  }
}

const nlohmann::json& SchemaChecker::schema(const std::string& id) const {
  const auto it = schemas_.find(id);
  if (it == schemas_.end()) throw std::out_of_range("no schema with $id " + id);
  return it->second;
}

std::vector<std::string> SchemaChecker::check(const nlohmann::json& document, const std::string& schema_id) const {
  std::vector<std::string> errors;
  check_node(document, schema(schema_id), schema_id, "", errors);
  return errors;
}

void SchemaChecker::check_node(const nlohmann::json& v, const nlohmann::json& s, const std::string& root_id,
                               const std::string& path, std::vector<std::string>& errors) const {
  const std::string where = path.empty() ? "/" : path;
  if (s.contains("$ref")) {
    const std::string ref = s.at("$ref").get<std::string>();
    const auto hash = ref.find('#');
    const std::string id = hash == 0 ? root_id : ref.substr(0, hash);
    const std::string pointer = hash == std::string::npos ? "" : ref.substr(hash + 1);
    check_node(v, schema(id).at(nlohmann::json::json_pointer(pointer)), id, path, errors);
  }
  if (s.contains("type")) {
    const auto& t = s.at("type");
    bool ok = false;
    for (const auto& one : t.is_array() ? t : nlohmann::json::array({t}))
      ok = ok || has_type(v, one.get<std::string>());
    if (!ok) {
      errors.push_back(where + ": expected type " + t.dump() + ", found " + v.type_name());
      return;
    }
  }
  if (s.contains("const") && v != s.at("const"))
    errors.push_back(where + ": expected " + s.at("const").dump() + ", found " + v.dump());
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s.at("enum")) found = found || e == v;
    if (!found) errors.push_back(where + ": " + v.dump() + " is not one of " + s.at("enum").dump());
  }
  if (v.is_object()) {
    for (const auto& key : s.value("required", nlohmann::json::array())) {
      if (!v.contains(key.get<std::string>()))
        errors.push_back(where + ": missing required key '" + key.get<std::string>() + "'");
    }
    const auto properties = s.value("properties", nlohmann::json::object());
    for (const auto& [key, value] : v.items()) {
      if (properties.contains(key))
        check_node(value, properties.at(key), root_id, path + "/" + key, errors);
      else if (s.contains("additionalProperties") && s.at("additionalProperties").is_object()) {
        check_node(value, s.at("additionalProperties"), root_id, path + "/" + key, errors);
      } else if (s.contains("additionalProperties") && s.at("additionalProperties") == false) {
        errors.push_back(where + ": key '" + key + "' is not allowed");
      }
    }
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s.at("minimum").get<double>())
      errors.push_back(where + ": " + v.dump() + " is below the minimum " + s.at("minimum").dump());
    if (s.contains("exclusiveMinimum") && x <= s.at("exclusiveMinimum").get<double>())
      errors.push_back(where + ": " + v.dump() + " is not above " + s.at("exclusiveMinimum").dump());
    if (s.contains("maximum") && x > s.at("maximum").get<double>())
      errors.push_back(where + ": " + v.dump() + " is above the maximum " + s.at("maximum").dump());
  }
  if (v.is_array() && s.contains("minItems") && v.size() < s.at("minItems").get<std::size_t>())
    errors.push_back(where + ": fewer than " + s.at("minItems").dump() + " items");
  if (v.is_string() && s.contains("minLength") && v.get<std::string>().size() < s.at("minLength").get<std::size_t>())
    errors.push_back(where + ": shorter than " + s.at("minLength").dump() + " characters");
  if (s.contains("if")) {
    std::vector<std::string> probe;
    check_node(v, s.at("if"), root_id, path, probe);
    const char* branch = probe.empty() ? "then" : "else";
    if (s.contains(branch)) check_node(v, s.at(branch), root_id, path, errors);
  }
  if (v.is_array() && s.contains("items")) {
    for (std::size_t i = 0; i < v.size(); ++i)
      check_node(v[i], s.at("items"), root_id, path + "/" + std::to_string(i), errors);
  }
}

}  // namespace moesim::test
