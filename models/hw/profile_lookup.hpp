// `--profile` takes a profile file or the name of a bundled one: "b300-hgx" is
// hardware_profiles/b300-hgx.json, found where the bundled data is (models/common/bundled_data.hpp).
#pragma once

#include <string>
#include <vector>

namespace moesim {

// The folder of bundled profiles.
inline constexpr const char* kBundledProfileFolder = "hardware_profiles";

// The names of the bundled profiles (file names without ".json"), sorted; empty when the folder
// is not found.
std::vector<std::string> bundled_profile_names();

// Whether `text` names a bundled profile rather than a file: no '/' and no ".json" ending.
bool is_profile_name(const std::string& text);

// The file to read for `argument`: an existing file, or any text with '/' or ending in ".json", is
// a path (as given); anything else is a bundled profile's name. Throws InputError (file `origin`,
// JSON path `path`: "--profile", or a scenario file and its "hardware" key) for an unknown name,
// suggesting the closest and listing the bundled names.
std::string resolve_profile(const std::string& argument, const std::string& origin = "--profile",
                            const std::string& path = "");

}  // namespace moesim
