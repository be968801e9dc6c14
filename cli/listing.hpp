// Where a command's human listing goes. Standard output, unless one of the command's output
// files is "-": standard output then carries that file's data alone and the listing goes to
// standard error, so `--json -` and `--csv -` can be piped into jq or a CSV reader.
#pragma once

#include <initializer_list>
#include <iostream>
#include <string>
#include <utility>

#include "models/common/errors.hpp"
#include "reports/output_file.hpp"

namespace moesim::cli {

// `outputs`: each output option's name ("--csv") and the path the user gave ("" when absent).
// Two outputs on "-" would interleave two documents on one stream: refused as bad input.
inline std::ostream& listing_stream(std::initializer_list<std::pair<const char*, const std::string*>> outputs) {
  const char* to_stdout = nullptr;
  for (const auto& [option, path] : outputs) {
    if (!is_standard_output(*path)) continue;
    if (to_stdout != nullptr) {
      throw InputError(
          option, "",
          std::string("'-' (standard output) is already taken by ") + to_stdout + "; at most one output may be '-'");
    }
    to_stdout = option;
  }
  return to_stdout != nullptr ? std::cerr : std::cout;
}

// A study none of whose points (or candidates) is a possible plan is bad input: the listing has
// shown why, and no report is written.
inline void require_a_valid_point(bool any_valid, std::size_t points, const std::string& what,
                                  const std::string& scenario) {
  if (any_valid) return;
  throw InputError(scenario, "",
                   "every " + what + " is invalid (" + std::to_string(points) + "); the reasons are listed above");
}

}  // namespace moesim::cli
