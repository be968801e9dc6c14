// Where the files that ship with moesim are found (hardware_profiles/, scenarios/validation/):
// in $MOESIM_DATA_DIR when it is set, else in the current directory, else in the folders above
// the running binary (build/cli/moesim sits two below the checkout), so `validate` and
// `--profile NAME` work from any directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace moesim {

// The variable that points at a moesim checkout (or an installed copy of its data).
inline constexpr const char* kDataDirVariable = "MOESIM_DATA_DIR";

// The folders searched, in order, without repeats.
std::vector<std::string> bundled_data_roots();

// `relative` (e.g. "scenarios/validation/seed.json") under the first root that has it.
std::optional<std::string> find_bundled(const std::string& relative);

// The same, or an InputError naming `relative`, every folder looked in, and how to point there.
std::string require_bundled(const std::string& relative);

}  // namespace moesim
