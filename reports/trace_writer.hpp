// Chrome / Perfetto trace (JSON trace-event format) of a replayed step: one process per
// simulated rank, one thread (track) per stream, one complete event per task.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/step_simulation.hpp"

namespace moesim {

// `ranks`: the simulated ranks (the trace's process ids) to write; empty writes all of them.
std::string trace_json(const Simulation& sim, const std::vector<std::uint32_t>& ranks = {});

// The events trace_json would write for `ranks`, counted without writing them, and the bytes an
// event takes on average (measured: kimi-k2's 512-GPU --all-ranks step wrote 1,061,178,197 bytes
// for 4,998,848 events, 212 each), so a command can say how large a trace will be before it
// builds it.
std::size_t trace_event_count(const Simulation& sim, const std::vector<std::uint32_t>& ranks = {});
inline constexpr std::size_t kTraceBytesPerEvent = 212;

}  // namespace moesim
