#include "models/common/json_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/common/errors.hpp"

namespace moesim {

namespace {

struct TextPosition {
  std::size_t line = 1;
  std::size_t column = 1;
};

// Line and column of byte `offset`, as editors count them.
TextPosition position_of(std::string_view text, std::size_t offset) {
  TextPosition p;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string at(const TextPosition& p) {
  return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
}

template <typename Json>
Json parse_as(const std::string& text, const std::string& file) {
  check_json_depth(text, file);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    throw InputError(file, "",
                     "malformed JSON at " + at(position_of(text, e.byte == 0 ? 0 : e.byte - 1)) + ": " + what);
  } catch (const nlohmann::json::exception& e) {
    // e.g. a number too large for a double (1e999)
    throw InputError(file, "", std::string("unreadable JSON: ") + e.what());
  }
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& file) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw InputError(file, "",
                         "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " +
                             at(position_of(text, i)) + "; allowed: at most " + std::to_string(kMaxJsonDepth) +
                             " levels of arrays and objects");
      }
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to report
    }
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  return parse_as<nlohmann::json>(text, file);
}

nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& file) {
  return parse_as<nlohmann::ordered_json>(text, file);
}

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory; expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

nlohmann::json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

nlohmann::ordered_json read_ordered_json_file(const std::string& path) {
  return parse_ordered_json_text(read_text_file(path), path);
}

}  // namespace moesim
