// The exit codes of `moesim`, for scripts and CI: 0 success, 1 an I/O or internal error,
// 2 bad input (also a sweep or comparison none of whose points is a possible plan),
// 3 a point is out of memory and the user asked for that to fail (`--fail-on-oom`).
#pragma once

#include <CLI/CLI.hpp>

namespace moesim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = 3;

inline void add_fail_on_oom(CLI::App* sub, bool& flag) {
  sub->add_flag("--fail-on-oom", flag,
                "exit with code 3 when a point is out of memory (the reports are still written)");
}

// The runner's exit code once its reports are written.
inline int exit_code(bool fail_on_oom, bool any_oom) { return fail_on_oom && any_oom ? kExitOutOfMemory : kExitOk; }

}  // namespace moesim::cli
