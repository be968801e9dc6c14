// Discrete-event replay of a TaskGraph. Events sit in a binary heap ordered by (time, sequence
// number), so equal times resolve the same way on every run. Running tasks progress at a rate:
// communication on one rank's link shares its bandwidth with the other transfers on it, and
// compute slows by the profile's SM-sharing factor while communication kernels run beside it.
#pragma once

#include <vector>

#include "sim/task_graph.hpp"

namespace moesim {

struct EngineOptions {
  double compute_slowdown_with_comm = 0;  // fraction (profile interference)
};

struct ReplayResult {
  std::vector<double> start;
  std::vector<double> finish;
  std::vector<TaskId> cause;  // the predecessor whose completion let the task start (kNoTask: none)
  double makespan = 0;
  TaskId last = kNoTask;      // a task that finishes at the makespan
};

ReplayResult replay(const TaskGraph& graph, const EngineOptions& options);

}  // namespace moesim
