// Reading a JSON document that another part of moesim wrote, with errors that say where: a
// missing key or a value of the wrong type throws std::invalid_argument naming the JSON path
// (/plans/3/fits), what was expected and the document's schema file. The HTML writers read
// their documents through it, so a document that does not follow its schema gives a clear
// error instead of a crash or a half-drawn page.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

class DocumentNode {
 public:
  // `schema_file` is named in every error, e.g. "reports/schema/moesim-plan.schema.json".
  DocumentNode(const nlohmann::json& value, std::string schema_file, std::string path = "");

  // The member `key` of an object; throws when this is not an object or has no such key.
  DocumentNode at(std::string_view key) const;
  bool has(std::string_view key) const;
  // The elements of an array; throws when this is not an array.
  std::vector<DocumentNode> elements() const;

  bool is_null() const { return value_->is_null(); }
  double number() const;
  long long integer() const;  // a JSON integer (4096.0 is not one here: documents write 4096)
  bool boolean() const;
  const std::string& string() const;
  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }

  // Throws the error this reader throws, about this node: "PATH: WHAT (see SCHEMA_FILE)".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const nlohmann::json* value_;
  std::string schema_file_;
  std::string path_;
};

}  // namespace moesim
