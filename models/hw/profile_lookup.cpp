#include "models/hw/profile_lookup.hpp"

#include <algorithm>
#include <filesystem>

#include "models/common/bundled_data.hpp"
#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"

namespace moesim {

namespace fs = std::filesystem;

namespace {
constexpr const char* kProfileExtension = ".json";

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

std::vector<std::string> bundled_profile_names() {
  std::vector<std::string> names;
  const auto folder = find_bundled(kBundledProfileFolder);
  if (!folder) return names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(*folder, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == kProfileExtension)
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool is_profile_name(const std::string& text) {
  return text.find('/') == std::string::npos && !ends_with(text, kProfileExtension);
}

std::string resolve_profile(const std::string& argument, const std::string& origin, const std::string& path) {
  std::error_code ec;
  if (fs::exists(argument, ec) || !is_profile_name(argument)) return argument;
  if (auto found = find_bundled(std::string(kBundledProfileFolder) + "/" + argument + kProfileExtension)) return *found;
  const auto names = bundled_profile_names();
  if (names.empty()) {
    // No bundled folder at all: say where it was looked for.
    require_bundled(kBundledProfileFolder);
  }
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
  throw InputError(
      origin, path.empty() ? argument : path,
      (path.empty() ? std::string() : "\"" + argument + "\": ") + "no such profile file or bundled profile" +
          did_you_mean(argument, names, "bundled profiles: " + listed + " (or give a profile file's path)"));
}

}  // namespace moesim
