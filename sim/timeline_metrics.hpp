// What the replay says about a step: where each rank's time went (compute by phase, exposed
// communication by phase, idle/bubble), the critical path, and bytes moved per rank.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/engine.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

inline constexpr std::size_t kPhases = static_cast<std::size_t>(PhaseTag::count);
inline constexpr std::size_t kCollKinds = 6;

struct RankTimeline {
  std::array<double, kPhases> busy{};     // time a phase's tasks ran (may overlap other phases)
  std::array<double, kPhases> exposed{};  // time attributed to the phase in the exclusive split
  double idle = 0;                        // nothing running: pipeline bubble or waiting
  double finish = 0;
  std::array<std::array<double, 2>, kCollKinds> bytes{};  // [collective kind][link class]
};

struct TimelineMetrics {
  double step_time = 0;
  std::uint32_t critical_rank = 0;  // the rank whose last task ends the step
  std::vector<RankTimeline> ranks;
  std::array<double, kPhases> critical_path{};  // time on the critical path per phase
  double critical_path_wait = 0;                // critical-path time spent waiting (sync skew)
};

TimelineMetrics measure(const TaskGraph& g, const ReplayResult& r);

}  // namespace moesim
