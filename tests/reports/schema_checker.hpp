// A deliberately tiny JSON Schema (draft 2020-12) checker for the tests: it enforces "type",
// "required", "const", "enum", "minimum", "exclusiveMinimum", "maximum", "minItems" and
// "minLength", and follows "properties", "items", "additionalProperties" (a schema, or false),
// "if"/"then"/"else" and "$ref" (same file "#/..." or another loaded schema's
// "$id", with an optional "#/..." pointer). Every other keyword is ignored, so it checks the structure of
// moesim's documents, not every constraint; a full validator (e.g. Python's jsonschema)
// accepts the same schema files.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim::test {

class SchemaChecker {
 public:
  // Loads every *.schema.json under `folder`, indexed by "$id".
  explicit SchemaChecker(const std::string& folder);

  const nlohmann::json& schema(const std::string& id) const;
  // One line per violation ("/points/3/result: missing required key 'mfu'"); empty when the
  // document conforms.
  std::vector<std::string> check(const nlohmann::json& document, const std::string& schema_id) const;

 private:
  void check_node(const nlohmann::json& value, const nlohmann::json& schema, const std::string& root_id,
                  const std::string& path, std::vector<std::string>& errors) const;
  std::map<std::string, nlohmann::json> schemas_;
};

}  // namespace moesim::test
