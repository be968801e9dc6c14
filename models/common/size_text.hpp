// Numbers written with a size suffix, read the same way on the command line (--set, --vary,
// --global-batch) and in JSON input files: K/M/G are powers of 1000, Ki/Mi/Gi powers of 1024
// (IEC 80000-13); "4Mi" is 4194304, an integer when it is one exactly.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace moesim {

// The number of a plain or suffixed size ("128Ki", "3", "0.5M"); nullopt when it is neither.
std::optional<double> size_value(const std::string& text);
// A size with a suffix as a JSON number; nullopt for text without such a suffix (plain numbers
// are JSON).
std::optional<nlohmann::json> size_literal(const std::string& text);
// A number as JSON: an integer when it is one exactly.
nlohmann::json number_json(double value);

}  // namespace moesim
