// What the replay says about a step: where each rank's time went (compute by phase, exposed
// communication by phase, idle/bubble; and the same split by kind of task), the critical path,
// and bytes moved per rank.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/engine.hpp"
#include "sim/step_builder.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

inline constexpr std::size_t kPhases = static_cast<std::size_t>(PhaseTag::count);

struct RankTimeline {
  std::array<double, kPhases> busy{};                // time a phase's tasks ran (may overlap other phases)
  std::array<double, kPhases> exposed{};             // time attributed to the phase in the exclusive split
  std::array<double, kTaskKinds> exposed_by_kind{};  // the same split by the charged task's kind
  std::array<double, kTaskKinds> busy_by_kind{};     // time each kind's tasks ran (overlaps: hidden work)
  double idle = 0;                                   // nothing running: pipeline bubble or waiting
  double finish = 0;
  std::array<std::array<double, kLinkClasses>, kCollectiveKinds> bytes{};  // [collective kind][link class]
  std::array<double, kCollectiveKinds> nvlink_relay_bytes{};               // of bytes[kind][nvlink]: PXN relay
};

struct TimelineMetrics {
  double step_time = 0;
  std::uint32_t critical_rank = 0;  // the rank whose last task ends the step
  std::vector<RankTimeline> ranks;
  std::array<double, kPhases> critical_path{};  // time on the critical path per phase
};

// Which ranks get their time measured (busy, exposed and idle time, the split by kind, finish):
// all of them, or only the critical rank, the one a step result reports (the others' stay zero).
// Bytes are counted on every rank either way. A pipeline step's split walks every rank's events.
enum class SplitRanks : std::uint8_t { all, critical };

TimelineMetrics measure(const TaskGraph& g, const ReplayResult& r, SplitRanks split = SplitRanks::all);

// Model-chunk passes whose activations each stage holds at once on the replayed timeline: from a
// pass's first compute kernel to the end of its backward's last, per chunk, at the first moment
// the most are held on any of the stage's simulated ranks.
std::vector<std::vector<std::int64_t>> measured_chunks_in_flight(const BuiltStep& step, const ReplayResult& r,
                                                                 std::int64_t stages, std::int64_t chunks);

}  // namespace moesim
