// Output files are written whole or not at all: a temporary file in the same folder, flushed to
// disk, then renamed over the target. An existing file is only ever replaced by a complete one.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace moesim {

// A JSON document as report text: two-space indent, a final newline, and any byte that is not
// UTF-8 (a file name, say) replaced by U+FFFD instead of failing the whole report.
template <typename Json>
std::string json_text(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// `path` "-" writes to standard output. Throws std::runtime_error naming the path on failure
// (the temporary file is removed and the target left as it was).
void write_atomic(const std::string& path, const std::string& content);

// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove any temporary file a
// write_atomic call has open, then end the process by the same signal (so that the shell sees
// an interrupted command). Call once, early in main.
void remove_partial_outputs_on_signal();

}  // namespace moesim
