// Option checks with messages that say what is allowed.
// - Numbers with one bound: CLI11's PositiveNumber and NonNegativeNumber are ranges up to the
//   largest double, and their message prints both ends ("Value 0 not in range 0.000000 to
//   179769...").
// - Fractions: CLI11's Range includes 0, which some fractions cannot be.
// - Output paths: an empty one (an unset shell variable) would otherwise write nothing, silently;
//   one that cannot be written is refused before the work starts.
#pragma once

#include <cmath>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "reports/output_file.hpp"

namespace moesim::cli {

namespace detail {

// A finite number that `allowed_value` accepts; the message says what is allowed.
template <class Allowed>
CLI::Validator finite_number(std::string allowed, std::string description, Allowed allowed_value) {
  return CLI::Validator(
      [allowed = std::move(allowed), allowed_value](std::string& input) -> std::string {
        double value = 0;
        const bool number = CLI::detail::lexical_cast(input, value) && std::isfinite(value);
        if (number && allowed_value(value)) return {};
        return "value " + input + " is not allowed; allowed: " + allowed;
      },
      std::move(description));
}

}  // namespace detail

inline CLI::Validator positive_number() {
  return detail::finite_number("a finite number > 0", "NUMBER > 0", [](double v) { return v > 0; });
}
inline CLI::Validator non_negative_number() {
  return detail::finite_number("a finite number >= 0", "NUMBER >= 0", [](double v) { return v >= 0; });
}

// A fraction in (0, max]: CLI11's Range takes 0 too and is described as "[0 - max]".
inline CLI::Validator fraction_up_to(double max) {
  const std::string bound = CLI::detail::to_string(max);
  return detail::finite_number("a number > 0 and <= " + bound, "NUMBER in (0, " + bound + "]",
                               [max](double v) { return v > 0 && v <= max; });
}

// Checked when the command line is parsed, so that a path that cannot be written (a missing
// folder, a directory) fails before any work instead of after it.
inline CLI::Validator output_path() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        if (input.empty()) return "an empty path is not allowed; allowed: a file path or - for standard output";
        try {
          check_output_path(input);
        } catch (const std::runtime_error& e) {
          return e.what();
        }
        return "";
      },
      "FILE");
}

}  // namespace moesim::cli
