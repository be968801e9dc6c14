// Runs the moesim command line as a user would (through the shell) and keeps its exit code,
// standard output and standard error.
#pragma once

#include <cstdlib>
#include <string>

#include <sys/wait.h>

#include "tests/support/fixtures.hpp"

namespace moesim::test {

struct CliRun {
  int rc = -1;  // the exit code; -1 when ended by a signal
  std::string out, err;
};

// `args` as shell text after the binary's path.
inline CliRun run_cli_captured(const std::string& args) {
  const TempDir dir;
  std::string command = MOESIM_CLI;
  command += " ";
  command += args;
  command += " >";
  command += dir.path("o");
  command += " 2>";
  command += dir.path("e");
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir.path("o")), slurp(dir.path("e"))};
}

}  // namespace moesim::test
