// Output files are written whole or not at all: a temporary file in the same folder, then rename.
#pragma once

#include <string>

namespace moesim {

// `path` "-" writes to standard output. Throws std::runtime_error naming the path on failure.
void write_atomic(const std::string& path, const std::string& content);

}  // namespace moesim
