// Small printf-style helpers shared by the text reports.
#pragma once

#include <cstdio>
#include <string>

namespace moesim {

inline std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace moesim
