// `--set a.b.c=VALUE` overrides: parsed once, applied to a JSON document before strict parsing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/size_text.hpp"

namespace moesim {

struct Override {
  std::string text;                                          // as the user wrote it, for error messages
  std::vector<std::variant<std::string, std::size_t>> path;  // keys and [indices]
  std::string dotted;                                        // canonical "a.b[2].c"
  nlohmann::json value;
};

// VALUE is a size (128Ki, 4Mi, 8K: see size_literal), else JSON when it parses (numbers,
// true/false, arrays, quoted strings), else a bare string. Throws InputError on a malformed
// expression.
Override parse_override(const std::string& expr, const std::string& origin);

// The same from a path and a value already parsed (a sweep point's, a design's expansion).
Override override_of(const std::string& path, const nlohmann::json& value, const std::string& origin);

// Sets the value, creating missing objects along the path. Throws InputError when the path runs
// through a value that is not an object (or an array index out of range).
// A null value removes the key (no input key takes null as a value; a missing key is left missing).
void apply_override(nlohmann::json& doc, const Override& o, const std::string& origin);

// JSON text is UTF-8: command-line text that is not cannot become a JSON value or report.
bool is_valid_utf8(std::string_view text);

std::string dotted_path(const std::vector<std::variant<std::string, std::size_t>>& path);

}  // namespace moesim
