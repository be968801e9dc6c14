// Error types thrown by library code; only cli/main turns them into exit codes.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace moesim {

// A user input is wrong: names the file, the JSON path, and what is allowed.
class InputError : public std::runtime_error {
 public:
  // `infeasible`: the input is well-formed but describes an impossible plan (a sweep reports
  // such a point and goes on, while a malformed input stops it before any point runs).
  InputError(std::string file, std::string path, const std::string& message, bool infeasible = false)
      : std::runtime_error(format(file, path, message)),
        file_(std::move(file)),
        path_(std::move(path)),
        message_(message),
        infeasible_(infeasible) {}

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }
  bool infeasible() const { return infeasible_; }

 private:
  static std::string format(const std::string& file, const std::string& path, const std::string& message) {
    std::string where = file.empty() ? std::string("<input>") : file;
    if (!path.empty()) where += ": " + path;
    return where + ": " + message;
  }
  std::string file_;
  std::string path_;
  std::string message_;
  bool infeasible_ = false;
};

// A key the object does not accept; `allowed()` lists the keys it does (in name order), so a
// caller can suggest, blame an override that added the key, or compare the list with a schema.
class UnknownKeyError : public InputError {
 public:
  UnknownKeyError(std::string file, std::string path, const std::string& message, std::vector<std::string> allowed)
      : InputError(std::move(file), std::move(path), message), allowed_(std::move(allowed)) {}
  const std::vector<std::string>& allowed() const { return allowed_; }

 private:
  std::vector<std::string> allowed_;
};

// The hardware profile has no numbers for an optional model a request needs (an EP transport
// nobody measured on this machine): the request is valid, this profile cannot price it. A caller
// that lists every model on one request (`moesim cost ep`) shows such a model as unavailable and
// lets any other InputError, a bad request, stop it.
class ProfileGapError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace moesim
