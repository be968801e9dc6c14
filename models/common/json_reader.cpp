#include "models/common/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "models/common/size_text.hpp"
#include "models/common/suggest.hpp"

namespace moesim {

namespace {
std::string type_name(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += '"';
    out += s;
    out += '"';
  }
  return out;
}
}  // namespace

std::string brief(const nlohmann::json& value) {
  std::string text = value.dump();
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

namespace {
std::string bound_text(double v) {
  // Whole bounds print every digit (1048576, not 1.04858e+06): they are counts the user types.
  if (std::floor(v) == v && std::fabs(v) <= kMaxExactInteger) return std::to_string(static_cast<std::int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

std::string Range::describe() const {
  std::ostringstream os;
  const bool has_lo = std::isfinite(min), has_hi = std::isfinite(max);
  if (has_lo && has_hi) {
    os << (min_exclusive ? "(" : "[") << bound_text(min) << ", " << bound_text(max) << "]";
  } else if (has_lo) {
    os << (min_exclusive ? "> " : ">= ") << bound_text(min);
  } else if (has_hi) {
    os << "<= " << bound_text(max);
  } else {
    os << "any finite number";
  }
  return os.str();
}

JsonReader::JsonReader(const nlohmann::json& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.is_object()) {
    throw InputError(file_, path_.empty() ? "(root)" : path_,
                     "expected an object, got " + type_name(node_) + " " + brief(node_));
  }
  // A document's root may name the JSON Schema it follows (schemas/), for editors; the parser
  // only checks that it is a string.
  if (path_.empty()) string_or(kSchemaKey, "");
}

std::string JsonReader::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool JsonReader::has(std::string_view key) const { return find(key) != nullptr; }

const nlohmann::json* JsonReader::find(std::string_view key) const {
  // Every key asked for counts as known, present or not, so finish() can list them all.
  consumed_.insert(std::string(key));
  auto it = node_.find(std::string(key));
  return it == node_.end() ? nullptr : &*it;
}

const nlohmann::json& JsonReader::require(std::string_view key) const {
  const auto* v = find(key);
  if (v != nullptr) return *v;
  missing(key, "required field is missing");
}

void JsonReader::missing(std::string_view key, const std::string& message) const {
  // A key of this object that no accessor asked for and that is a typo of the missing one is the
  // mistake to name: "num_layer" is an unknown key, not a second problem beside "num_layers".
  std::vector<std::string> unread;
  for (const auto& [present, value] : node_.items())
    if (consumed_.find(present) == consumed_.end()) unread.push_back(present);
  // At most two edits: a farther key may be one of this object's own keys not read yet
  // ("dense_layers" beside a missing "num_layers").
  constexpr std::size_t kTypoEdits = 2;
  const std::string typo = closest_match(key, unread);
  if (!typo.empty() && edit_distance(key, typo) <= kTypoEdits) {
    const std::vector<std::string> known(consumed_.begin(), consumed_.end());
    throw UnknownKeyError(file_, child_path(typo),
                          "unknown key; did you mean '" + std::string(key) + "'? (a required field, missing)", known);
  }
  fail(key, message);
}

namespace {
// A JSON string that spells a size ("4Mi", "128Ki", "8K") stands for its number, as on the
// command line; any other string is not a number.
const nlohmann::json* size_number(const nlohmann::json& v, nlohmann::json& storage) {
  if (!v.is_string()) return &v;
  if (auto size = size_literal(v.get<std::string>())) {
    storage = std::move(*size);
    return &storage;
  }
  return &v;
}
constexpr const char* kSizeHint = " (sizes with a suffix such as \"4Mi\" or \"8K\" are numbers too)";
}  // namespace

void JsonReader::fail(std::string_view key, const std::string& message) const {
  throw InputError(file_, child_path(key), message);
}

double JsonReader::as_number(const nlohmann::json& given, const std::string& path, Range range) const {
  nlohmann::json storage;
  const nlohmann::json& v = *size_number(given, storage);
  if (!v.is_number()) {
    throw InputError(file_, path,
                     "expected a number in " + range.describe() + ", got " + type_name(v) + " " + brief(v) +
                         (v.is_string() ? kSizeHint : ""));
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || !range.contains(x)) {
    throw InputError(file_, path, "value " + brief(v) + " is out of range; allowed: " + range.describe());
  }
  return x;
}

std::int64_t JsonReader::as_integer(const nlohmann::json& given, const std::string& path, Range range) const {
  nlohmann::json storage;
  const nlohmann::json& v = *size_number(given, storage);
  const bool integral_float = v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
  if (!(v.is_number_integer() || v.is_number_unsigned() || integral_float)) {
    throw InputError(file_, path,
                     "expected an integer in " + range.describe() + ", got " + type_name(v) + " " + brief(v) +
                         (v.is_string() ? kSizeHint : ""));
  }
  const double x = v.get<double>();
  if (!range.contains(x) || std::fabs(x) > kMaxExactInteger) {
    throw InputError(file_, path, "value " + brief(v) + " is out of range; allowed: " + range.describe());
  }
  return static_cast<std::int64_t>(x);
}

double JsonReader::number(std::string_view key, Range range) const {
  return as_number(require(key), child_path(key), range);
}

double JsonReader::number_or(std::string_view key, double fallback, Range range) const {
  const auto* v = find(key);
  return v ? as_number(*v, child_path(key), range) : fallback;
}

std::int64_t JsonReader::integer(std::string_view key, Range range) const {
  return as_integer(require(key), child_path(key), range);
}

std::int64_t JsonReader::integer_or(std::string_view key, std::int64_t fallback, Range range) const {
  const auto* v = find(key);
  return v ? as_integer(*v, child_path(key), range) : fallback;
}

bool JsonReader::boolean(std::string_view key) const {
  const auto& v = require(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + type_name(v) + " " + brief(v));
  return v.get<bool>();
}

bool JsonReader::boolean_or(std::string_view key, bool fallback) const { return has(key) ? boolean(key) : fallback; }

std::string JsonReader::string(std::string_view key) const {
  const auto& v = require(key);
  if (!v.is_string()) fail(key, "expected a string, got " + type_name(v) + " " + brief(v));
  return v.get<std::string>();
}

std::string JsonReader::string_or(std::string_view key, std::string fallback) const {
  return has(key) ? string(key) : fallback;
}

std::string JsonReader::choice(std::string_view key, std::initializer_list<std::string_view> allowed) const {
  return choice_in(key, {allowed.begin(), allowed.end()});
}

std::string JsonReader::choice_in(std::string_view key, const std::vector<std::string>& allowed) const {
  const auto& v = require(key);
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    for (const auto& a : allowed) {
      if (s == a) return s;
    }
  }
  const std::string word = v.is_string() ? v.get<std::string>() : std::string();
  fail(key, "value " + brief(v) + " is not allowed" + did_you_mean(word, allowed, "allowed: " + quoted_list(allowed)));
}

std::string JsonReader::choice_or(std::string_view key, std::string fallback,
                                  std::initializer_list<std::string_view> allowed) const {
  return has(key) ? choice(key, allowed) : fallback;
}

std::vector<std::int64_t> JsonReader::integer_list(std::string_view key, Range range) const {
  const auto& v = require(key);
  if (!v.is_array()) fail(key, "expected an array of integers, got " + type_name(v));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(as_integer(v[i], child_path(key) + "[" + std::to_string(i) + "]", range));
  }
  return out;
}

std::vector<std::string> JsonReader::choice_list(std::string_view key, const std::vector<std::string>& allowed) const {
  const auto& v = require(key);
  if (!v.is_array())
    fail(key, "expected an array of names, got " + type_name(v) + "; allowed: " + quoted_list(allowed));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    const std::string word = v[i].is_string() ? v[i].get<std::string>() : std::string();
    if (!v[i].is_string() || std::find(allowed.begin(), allowed.end(), word) == allowed.end()) {
      fail(at, "value " + brief(v[i]) + " is not allowed" +
                   did_you_mean(word, allowed, "allowed: " + quoted_list(allowed)));
    }
    if (std::find(out.begin(), out.end(), word) != out.end()) fail(at, "\"" + word + "\" is listed twice");
    out.push_back(word);
  }
  return out;
}

std::vector<double> JsonReader::number_list(std::string_view key, Range range) const {
  const auto& v = require(key);
  if (!v.is_array()) fail(key, "expected an array of numbers, got " + type_name(v));
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(as_number(v[i], child_path(key) + "[" + std::to_string(i) + "]", range));
  }
  return out;
}

std::vector<std::int64_t> JsonReader::integer_list_or(std::string_view key, Range range) const {
  return has(key) ? integer_list(key, range) : std::vector<std::int64_t>{};
}

JsonReader JsonReader::object(std::string_view key) const { return JsonReader(require(key), file_, child_path(key)); }

std::optional<JsonReader> JsonReader::optional_object(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr) return std::nullopt;
  return JsonReader(*v, file_, child_path(key));
}

std::vector<JsonReader> JsonReader::object_list(std::string_view key) const {
  const auto& v = require(key);
  if (!v.is_array()) fail(key, "expected an array of objects, got " + type_name(v) + " " + brief(v));
  std::vector<JsonReader> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.emplace_back(v[i], file_, child_path(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

void JsonReader::finish() const {
  for (const auto& [key, value] : node_.items()) {
    if (consumed_.find(key) == consumed_.end()) {
      // Listing the keys that were read tells the user what this object accepts.
      const std::vector<std::string> allowed(consumed_.begin(), consumed_.end());
      const std::string known = comma_joined(allowed);
      throw UnknownKeyError(
          file_, child_path(key),
          "unknown key" + did_you_mean(key, allowed, known.empty() ? "" : "allowed keys here: " + known), allowed);
    }
  }
}

}  // namespace moesim
