#include "models/input/overrides.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>

#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"

namespace moesim {

std::string dotted_path(const std::vector<std::variant<std::string, std::size_t>>& path) {
  std::string out;
  for (const auto& p : path) {
    if (const auto* key = std::get_if<std::string>(&p)) {
      if (!out.empty()) out.push_back('.');
      out.append(*key);
    } else {
      out.push_back('[');
      out.append(std::to_string(std::get<std::size_t>(p)));
      out.push_back(']');
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Sequence length and the smallest code point it may encode (no overlong forms).
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

namespace {

// "a.b[2].c" into keys and indices; `expr` is the whole expression, for errors.
std::vector<std::variant<std::string, std::size_t>> parse_path(const std::string& path, const std::string& expr,
                                                               const std::string& origin) {
  std::vector<std::variant<std::string, std::size_t>> out;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      const auto close = path.find(']', i);
      const std::string digits = close == std::string::npos ? "" : path.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError(origin, expr, "bad array index in path; expected [N] with N a non-negative integer");
      }
      out.emplace_back(static_cast<std::size_t>(std::stoul(digits)));
      i = close + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    std::size_t j = i;
    while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
    const std::string key = path.substr(i, j - i);
    if (key.empty()) throw InputError(origin, expr, "empty key in path");
    for (char c : key) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
        throw InputError(
            origin, expr,
            "invalid character '" + std::string(1, c) + "' in path; keys use letters, digits, '_' and '-'");
      }
    }
    out.emplace_back(key);
    i = (j < path.size() && path[j] == '.') ? j + 1 : j;
    if (i == path.size() && j < path.size() && path[j] == '.') throw InputError(origin, expr, "path ends with '.'");
  }
  if (out.empty() || !std::holds_alternative<std::string>(out.front())) {
    throw InputError(origin, expr, "path must start with a key");
  }
  return out;
}

}  // namespace

Override parse_override(const std::string& expr, const std::string& origin) {
  if (!is_valid_utf8(expr)) throw InputError(origin, "", "the expression is not valid UTF-8 text");
  const auto eq = expr.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError(origin, expr, "expected PATH=VALUE, e.g. plan.expert_parallel.degree=8");
  }
  Override o;
  o.text = expr;
  const std::string value = expr.substr(eq + 1);
  o.path = parse_path(expr.substr(0, eq), expr, origin);
  o.dotted = dotted_path(o.path);
  if (auto size = size_literal(value)) {
    o.value = *size;
    return o;
  }
  check_json_depth(value, origin);
  o.value = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (o.value.is_discarded()) o.value = value;  // a bare word is a string
  return o;
}

Override override_of(const std::string& path, const nlohmann::json& value, const std::string& origin) {
  Override o;
  o.text = path + "=" + value.dump();
  if (!is_valid_utf8(path)) throw InputError(origin, "", "the path is not valid UTF-8 text");
  o.path = parse_path(path, o.text, origin);
  o.dotted = dotted_path(o.path);
  o.value = value;
  return o;
}

void apply_override(nlohmann::json& doc, const Override& o, const std::string& origin) {
  nlohmann::json* node = &doc;
  std::vector<std::variant<std::string, std::size_t>> walked;
  for (std::size_t k = 0; k < o.path.size(); ++k) {
    const bool last = k + 1 == o.path.size();
    const auto& step = o.path[k];
    walked.push_back(step);
    if (const auto* key = std::get_if<std::string>(&step)) {
      if (node->is_null()) *node = nlohmann::json::object();
      if (!node->is_object()) {
        throw InputError(origin, o.text,
                         "cannot set key \"" + *key + "\": " + dotted_path({walked.begin(), walked.end() - 1}) +
                             " is not an object");
      }
      if (o.value.is_null()) {  // null removes the key: the input as if it never had it
        if (!node->contains(*key)) return;
        if (last) {
          node->erase(*key);
          return;
        }
      }
      node = &(*node)[*key];
    } else {
      const auto idx = std::get<std::size_t>(step);
      if (!node->is_array() || idx >= node->size()) {
        throw InputError(origin, o.text, dotted_path(walked) + " does not exist (not an array, or index out of range)");
      }
      node = &(*node)[idx];
    }
    if (last) *node = o.value;
  }
}

}  // namespace moesim
