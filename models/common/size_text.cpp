#include "models/common/size_text.hpp"

#include <cmath>
#include <cstdint>
#include <exception>
#include <utility>

#include "models/common/json_reader.hpp"

namespace moesim {

std::optional<double> size_value(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = text.substr(used);
  const std::pair<const char*, double> units[] = {{"", 1},        {"K", 1e3},        {"M", 1e6},          {"G", 1e9},
                                                  {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}};
  for (const auto& [name, scale] : units) {
    if (unit == name) return v * scale;
  }
  return std::nullopt;
}

nlohmann::json number_json(double value) {
  if (std::floor(value) == value && std::fabs(value) < kMaxExactInteger) return static_cast<std::int64_t>(value);
  return value;
}

std::optional<nlohmann::json> size_literal(const std::string& text) {
  const auto v = size_value(text);
  if (!v || text.find_first_of("KMG") == std::string::npos || !std::isfinite(*v)) return std::nullopt;
  return number_json(*v);
}

}  // namespace moesim
