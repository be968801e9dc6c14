// Reading JSON inputs: a missing file, a directory, malformed JSON (with its line and column) and
// nesting deeper than any moesim input needs are InputErrors naming the file. The depth bound is
// checked on the text before parsing: nested values are walked recursively when an error shows
// them or a report writes them, and 100,000 levels would overflow the stack there.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moesim {

// The deepest moesim input (a profile's table rows inside a section inside the hardware section
// of a scenario inside a sweep's include) nests under 10 levels; 64 leaves room for any
// reasonable document and stays far below what a recursive walk of the parsed value can take.
inline constexpr int kMaxJsonDepth = 64;

// Throws InputError naming `file`, the line and column of the first bracket past the limit.
void check_json_depth(std::string_view text, const std::string& file);

nlohmann::json parse_json_text(const std::string& text, const std::string& file);
// The same, keeping keys in file order (the fitter rewrites a profile without reordering it).
nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& file);

// The whole file as bytes: "cannot open file" or "is a directory" as InputErrors.
std::string read_text_file(const std::string& path);
nlohmann::json read_json_file(const std::string& path);
nlohmann::ordered_json read_ordered_json_file(const std::string& path);

}  // namespace moesim
