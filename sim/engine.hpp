// Discrete-event replay of a TaskGraph. Events sit in an indexed heap ordered by (time, sequence
// number), so equal times resolve the same way on every run. Running tasks progress at rates
// that change only when a task starts or ends; who gets how much is the ResourceSharing
// policy's business, not the engine's.
#pragma once

#include <vector>

#include "sim/resource_sharing.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

// One entry per task start and per task finish, in the order the replay made them happen
// (chronological; at equal times as the engine processed them).
struct TimelineEvent {
  TaskId task = kNoTask;
  bool start = false;
  double time = 0;  // the task's start or finish: read in event order, without a look-up by task
};

struct ReplayResult {
  std::vector<double> start;
  std::vector<double> finish;
  std::vector<TimelineEvent> events;
  std::vector<TaskId> cause;  // the predecessor whose completion let the task start (kNoTask: none)
  double makespan = 0;
  TaskId last = kNoTask;  // a task that finishes at the makespan
};

ReplayResult replay(const TaskGraph& graph, const ResourceSharing& sharing);
// The same into `out`, reusing its buffers (a sweep thread's or a benchmark's repeated replays).
void replay(const TaskGraph& graph, const ResourceSharing& sharing, ReplayResult& out);

}  // namespace moesim
