// What the measurements were taken on: host, date, driver and library versions, devices.
#pragma once

#include "context.hpp"
#include "json.hpp"

namespace moesim::cal {

// Versions, host and date; devices from ctx when given, else from whatever the runtime can see
// (possibly nothing: the no-device path still records the host and the library versions).
json::Value collect_environment(const Context* ctx);

// {"name", "version", "build", "with_mpi", "command_line"}.
json::Value tool_info(const std::vector<std::string>& argv);

}  // namespace moesim::cal
