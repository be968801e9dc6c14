#include "models/common/bundled_data.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"

namespace moesim {

namespace fs = std::filesystem;

namespace {
// build/cli/moesim and build/tests/moesim_tests are two folders below the checkout; an installed
// bin/moesim beside share/ is one. Three levels cover both with one to spare.
constexpr int kBinaryLevels = 3;

void add_root(std::vector<std::string>& roots, const fs::path& folder) {
  std::error_code ec;
  const fs::path normal = fs::weakly_canonical(folder, ec);
  const std::string text = (ec ? folder.lexically_normal() : normal).string();
  if (!text.empty() && std::find(roots.begin(), roots.end(), text) == roots.end()) roots.push_back(text);
}
}  // namespace

std::vector<std::string> bundled_data_roots() {
  std::vector<std::string> roots;
  if (const char* dir = std::getenv(kDataDirVariable); dir != nullptr && *dir != '\0') add_root(roots, dir);
  std::error_code ec;
  if (const fs::path cwd = fs::current_path(ec); !ec) add_root(roots, cwd);
  // Linux names the running binary here; elsewhere the folders above it are not searched.
  const fs::path binary = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path folder = binary.parent_path();
    for (int level = 0; level < kBinaryLevels && !folder.empty(); ++level, folder = folder.parent_path()) {
      add_root(roots, folder);
      if (folder == folder.root_path()) break;
    }
  }
  return roots;
}

std::optional<std::string> find_bundled(const std::string& relative) {
  for (const auto& root : bundled_data_roots()) {
    std::error_code ec;
    const fs::path candidate = fs::path(root) / relative;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  }
  return std::nullopt;
}

std::string require_bundled(const std::string& relative) {
  if (auto found = find_bundled(relative)) return *found;
  const std::string looked = comma_joined(bundled_data_roots());
  throw InputError(relative, "",
                   "bundled file not found; looked in: " + looked + ". Run moesim from its checkout, or set " +
                       kDataDirVariable + "=<the moesim checkout>, or pass the file's path");
}

}  // namespace moesim
