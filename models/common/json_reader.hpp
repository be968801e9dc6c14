// Strict, path-aware reading of one JSON object: every key must be known, every value typed and
// in range, and every error names the file, the JSON path, the value and what is allowed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/enum_names.hpp"

#include "models/common/errors.hpp"

namespace moesim {

// Closed interval check for numbers; `min_exclusive` turns the lower bound into ">".
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;

  static Range positive() { return {0.0, std::numeric_limits<double>::infinity(), true}; }
  static Range non_negative() { return {0.0, std::numeric_limits<double>::infinity(), false}; }
  static Range at_least(double lo) { return {lo, std::numeric_limits<double>::infinity(), false}; }
  static Range between(double lo, double hi) { return {lo, hi, false}; }
  bool contains(double v) const { return (min_exclusive ? v > min : v >= min) && v <= max; }
  std::string describe() const;
};

// 2^53: every integer up to it is exact as a double, so larger counts are refused.
inline constexpr double kMaxExactInteger = 9.007199254740992e15;

// The root key that names a document's JSON Schema ("$schema": "../schemas/moesim-plan.schema.json").
inline constexpr std::string_view kSchemaKey = "$schema";

class JsonReader {
 public:
  // `path` is the JSON path of `node` inside `file` ("" for the document root, which may hold a
  // "$schema" string).
  JsonReader(const nlohmann::json& node, std::string file, std::string path);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  std::string child_path(std::string_view key) const;
  bool has(std::string_view key) const;

  double number(std::string_view key, Range range) const;
  double number_or(std::string_view key, double fallback, Range range) const;
  std::int64_t integer(std::string_view key, Range range) const;
  std::int64_t integer_or(std::string_view key, std::int64_t fallback, Range range) const;
  bool boolean(std::string_view key) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  // One of `allowed`; the error lists them.
  std::string choice(std::string_view key, std::initializer_list<std::string_view> allowed) const;
  std::string choice_or(std::string_view key, std::string fallback,
                        std::initializer_list<std::string_view> allowed) const;
  // The same for a list made at run time (a registry's names).
  std::string choice_in(std::string_view key, const std::vector<std::string>& allowed) const;
  // A value named in `names` (an enum's table, models/common/enum_names.hpp); `fallback` when
  // the key is absent. The error lists the table's names.
  template <class E, std::size_t N>
  E choice_of(std::string_view key, const EnumNames<E, N>& names, E fallback) const {
    if (!has(key)) return fallback;
    return names.parse(choice_in(key, names.names()));
  }
  std::vector<std::int64_t> integer_list(std::string_view key, Range range) const;
  // An array of distinct names, each one of `allowed` (the error names the element at fault).
  std::vector<std::string> choice_list(std::string_view key, const std::vector<std::string>& allowed) const;
  std::vector<double> number_list(std::string_view key, Range range) const;
  std::vector<std::int64_t> integer_list_or(std::string_view key, Range range) const;

  JsonReader object(std::string_view key) const;
  std::optional<JsonReader> optional_object(std::string_view key) const;
  // An array of objects: one reader per element, its path `key[i]`.
  std::vector<JsonReader> object_list(std::string_view key) const;

  // Throws InputError naming the first key that no accessor asked for.
  void finish() const;
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  // A required `key` that is missing: where a key of this object no accessor read is a typo of it
  // (at most two edits), that key is named as unknown ("did you mean"); otherwise `message`.
  [[noreturn]] void missing(std::string_view key, const std::string& message) const;

 private:
  const nlohmann::json& require(std::string_view key) const;
  const nlohmann::json* find(std::string_view key) const;
  std::int64_t as_integer(const nlohmann::json& v, const std::string& path, Range range) const;
  double as_number(const nlohmann::json& v, const std::string& path, Range range) const;

  const nlohmann::json& node_;
  std::string file_;
  std::string path_;
  mutable std::set<std::string, std::less<>> consumed_;
};

// Short rendering of a JSON value for error messages.
std::string brief(const nlohmann::json& value);

}  // namespace moesim
