// Small printf-style helpers shared by the text reports.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace moesim {

inline std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// A JSON value as a table cell or label: strings bare, everything else as JSON text.
inline std::string json_value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A point's values as "path=value" pairs joined by `sep`.
inline std::string assignments_text(const nlohmann::json& values, const char* sep) {
  std::string out;
  for (const auto& [path, v] : values.items()) out += (out.empty() ? "" : sep) + path + "=" + json_value_text(v);
  return out;
}

}  // namespace moesim
