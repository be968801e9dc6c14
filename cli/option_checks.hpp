// Option checks with messages that say what is allowed.
// - Numbers with one bound: CLI11's PositiveNumber and NonNegativeNumber are ranges up to the
//   largest double, and their message prints both ends ("Value 0 not in range 0.000000 to
//   179769...").
// - Fractions: CLI11's Range includes 0, which some fractions cannot be.
// - Output paths: an empty one (an unset shell variable) would otherwise write nothing, silently.
#pragma once

#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

namespace moesim::cli {

namespace detail {

inline CLI::Validator bounded_below(bool allow_zero) {
  const std::string allowed = allow_zero ? "a finite number >= 0" : "a finite number > 0";
  return CLI::Validator(
      [allow_zero, allowed](std::string& input) -> std::string {
        double value = 0;
        const bool number = CLI::detail::lexical_cast(input, value) && std::isfinite(value);
        if (number && (allow_zero ? value >= 0 : value > 0)) return {};
        return "value " + input + " is not allowed; allowed: " + allowed;
      },
      allow_zero ? "NUMBER >= 0" : "NUMBER > 0");
}

}  // namespace detail

inline CLI::Validator positive_number() { return detail::bounded_below(false); }
inline CLI::Validator non_negative_number() { return detail::bounded_below(true); }

// A fraction in (0, max]: CLI11's Range takes 0 too and is described as "[0 - max]".
inline CLI::Validator fraction_up_to(double max) {
  const std::string allowed = "a number > 0 and <= " + CLI::detail::to_string(max);
  return CLI::Validator(
      [max, allowed](std::string& input) -> std::string {
        double value = 0;
        const bool number = CLI::detail::lexical_cast(input, value) && std::isfinite(value);
        if (number && value > 0 && value <= max) return {};
        return "value " + input + " is not allowed; allowed: " + allowed;
      },
      "NUMBER in (0, " + CLI::detail::to_string(max) + "]");
}

inline CLI::Validator output_path() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        return input.empty() ? "an empty path is not allowed; allowed: a file path or - for standard output" : "";
      },
      "FILE");
}

}  // namespace moesim::cli
