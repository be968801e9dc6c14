// Report files are the user's: a regular file is replaced whole or not at all (a temporary file in
// the same folder, flushed to disk, then renamed over it), while a device, a FIFO or an open
// descriptor's name (/dev/fd/N, process substitution) is written through, and a symbolic link
// keeps pointing where it did: the file it leads to is the one replaced.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moesim {

// A JSON document as report text: two-space indent, a final newline, and any byte that is not
// UTF-8 (a file name, say) replaced by U+FFFD instead of failing the whole report.
template <typename Json>
std::string json_text(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace detail {
class PendingFile;  // a temporary file the signal handler removes
}

// An output written in pieces (a sweep's points as they finish) with the guarantees above: a
// regular file's temporary is renamed over it on commit() and removed if the stream is
// destroyed uncommitted (an error part way), so the old file stays; other targets are written
// through as the pieces come. "-" is standard output.
class OutputStream {
 public:
  explicit OutputStream(const std::string& path);
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  void write(std::string_view text);
  void commit();

 private:
  std::string path_, target_, tmp_;
  int fd_ = -1;  // -1: standard output (or closed once committed)
  bool committed_ = false;
  std::unique_ptr<detail::PendingFile> pending_;
};

// Whether `path` is this process's standard output: "-", or a name of the same open file
// (/dev/stdout, /dev/fd/1, or the file the shell redirected standard output to). Such a path is
// written as "-" is, through standard output, and the command's listing moves to standard error.
bool is_standard_output(const std::string& path);

// Checks, before any work, that `path` can be written as write_output would write it: an existing
// target is no folder and (device, FIFO, descriptor) is writable; a new or regular file's folder
// exists and takes a new file. Creates nothing and opens nothing. Throws std::runtime_error
// naming the path.
void check_output_path(const std::string& path);

// Writes `content` to `path`; "-" is standard output. Throws std::runtime_error naming the path
// on failure; a regular file that existed is then left as it was, and no temporary file stays.
void write_output(const std::string& path, const std::string& content);

// Installs handlers for the catchable signals that end a process (SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGPIPE, SIGALRM, SIGVTALRM, SIGUSR1/2, SIGXCPU, SIGXFSZ; not those the parent set to
// be ignored) that remove any temporary file a write_output call has open, then end the process
// by the same signal (so that the shell sees an interrupted command). Call once, early in main. A
// temporary left by SIGKILL is removed by the next write to the same path.
void remove_partial_outputs_on_signal();

}  // namespace moesim
