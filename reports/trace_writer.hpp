// Chrome / Perfetto trace (JSON trace-event format) of a replayed step: one process per
// simulated rank, one thread (track) per stream, one complete event per task.
#pragma once

#include <string>

#include "sim/step_simulation.hpp"

namespace moesim {

std::string trace_json(const Simulation& sim);

}  // namespace moesim
