#include "sim/timeline_metrics.hpp"

#include "sim/pipeline_schedule.hpp"
#include "sim/short_list.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace moesim {

namespace {

bool is_compute_stream(StreamKind s) { return s == StreamKind::compute || s == StreamKind::side; }

// What the time split reads of a task, in 8 bytes: the events come in time order, so the tasks
// they name are scattered over the graph, and a short table is far cheaper to look them up in
// (the graph's tasks are 64 bytes each, the start and finish times two more arrays).
struct TaskBrief {
  std::uint32_t rank = 0;
  PhaseTag phase = PhaseTag::forward;
  TaskKind kind = TaskKind::compute;
  bool compute_stream = false;
  bool split = false;  // charged by the split: a measured rank's task that occupies time
};

// Exclusive split of [0, step] for one rank: compute wins over communication, communication over
// idle; among several, the one that started first is charged. The time reached and the two sums
// being charged (the charged task's phase and kind, or idle) are held in locals across the loop
// and written back when the charged task changes: kept in memory, each event's add waited on the
// store of the last one to the same sum.
class RankSplit {
 public:
  RankSplit(const std::vector<TaskBrief>& briefs, RankTimeline& out) : briefs_(&briefs), out_(&out) {}

  // Walks the replay's events that `mine` takes (this rank's, in time order), then on to `until`.
  template <class Mine>
  void run(const std::vector<TimelineEvent>& events, Mine&& mine, double until) {
    double spare = 0;  // idle time has no kind: its by-kind share lands here
    double t = 0;
    double* phase_slot = &out_->idle;
    double* kind_slot = &spare;
    double phase_sum = *phase_slot, kind_sum = *kind_slot;
    const auto charge = [&](double to) {
      if (to <= t) return;
      const double dt = to - t;
      phase_sum += dt;
      kind_sum += dt;
      t = to;
    };
    const auto retarget = [&] {
      const TaskId pick = !compute_.empty() ? compute_.front() : !other_.empty() ? other_.front() : kNoTask;
      double* p = &out_->idle;
      double* k = &spare;
      if (pick != kNoTask) {
        const TaskBrief& b = (*briefs_)[pick];
        p = &out_->exposed[static_cast<std::size_t>(b.phase)];
        k = &out_->exposed_by_kind[static_cast<std::size_t>(b.kind)];
      }
      if (p != phase_slot) {
        *phase_slot = phase_sum;
        phase_slot = p;
        phase_sum = *p;
      }
      if (k != kind_slot) {
        *kind_slot = kind_sum;
        kind_slot = k;
        kind_sum = *k;
      }
    };
    for (const TimelineEvent& e : events) {
      const TaskBrief& b = (*briefs_)[e.task];
      if (!mine(b)) continue;
      charge(e.time);
      auto& list = b.compute_stream ? compute_ : other_;
      if (e.start) {
        list.push_back(e.task);
      } else {
        remove_in_order(list, e.task);
      }
      retarget();
    }
    charge(until);
    *phase_slot = phase_sum;
    *kind_slot = kind_sum;
  }

 private:
  const std::vector<TaskBrief>* briefs_;
  RankTimeline* out_;
  std::vector<TaskId> compute_;  // running compute-stream tasks, in start order
  std::vector<TaskId> other_;    // the rest
};

}  // namespace

TimelineMetrics measure(const TaskGraph& g, const ReplayResult& r, SplitRanks split) {
  TimelineMetrics m;
  m.step_time = r.makespan;
  m.ranks.resize(g.ranks());
  if (r.last != kNoTask) m.critical_rank = g.task(r.last).rank;
  const bool every_rank = split == SplitRanks::all;
  thread_local std::vector<TaskBrief> briefs;  // a sweep thread's scratch, kept between points
  briefs.resize(g.size());
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    RankTimeline& rt = m.ranks[t.rank];
    const double start = r.start[id], finish = r.finish[id];
    if (every_rank || t.rank == m.critical_rank) {
      rt.busy[static_cast<std::size_t>(t.phase)] += finish - start;
      rt.busy_by_kind[static_cast<std::size_t>(t.kind)] += finish - start;
      rt.finish = std::max(rt.finish, finish);
    }
    if (is_communication(t.kind)) {
      for (std::size_t l = 0; l < kLinkClasses; ++l) rt.bytes[static_cast<std::size_t>(t.coll)][l] += t.link_bytes[l];
      rt.nvlink_relay_bytes[static_cast<std::size_t>(t.coll)] += t.nvlink_relay_bytes;
    }
    briefs[id] = {t.rank, t.phase, t.kind, is_compute_stream(t.stream),
                  (every_rank || t.rank == m.critical_rank) && finish > start};
  }
  // Each measured rank's split walks its events. Only the critical rank's is measured in a
  // simulation; measuring every rank (tests) walks the events once per rank.
  if (every_rank) {
    for (std::uint32_t rank = 0; rank < g.ranks(); ++rank) {
      RankSplit(briefs, m.ranks[rank])
          .run(
              r.events, [rank](const TaskBrief& b) { return b.split && b.rank == rank; }, r.makespan);
    }
  } else if (g.ranks() > 0) {  // a graph of no ranks has no critical rank to split
    RankSplit(briefs, m.ranks[m.critical_rank])
        .run(
            r.events, [](const TaskBrief& b) { return b.split; }, r.makespan);
  }

  // Critical path: follow each task back to the predecessor that released it.
  for (TaskId id = r.last; id != kNoTask; id = r.cause[id]) {
    m.critical_path[static_cast<std::size_t>(g.task(id).phase)] += r.finish[id] - r.start[id];
  }
  return m;
}

std::vector<std::vector<std::int64_t>> measured_chunks_in_flight(const BuiltStep& step, const ReplayResult& r,
                                                                 std::int64_t stages, std::int64_t chunks) {
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(stages),
                                             std::vector<std::int64_t>(static_cast<std::size_t>(chunks), 0));
  std::vector<std::int64_t> peak_of(static_cast<std::size_t>(stages), 0);
  // Each (rank, microbatch, chunk)'s span, in a dense table walked in that key order (ranks,
  // microbatch and chunk numbers are small and from 0).
  std::int32_t microbatches = 0, chunk_count = 0;
  for (const OpSpan& s : step.ops) {
    if (s.op.microbatch < 0 || s.op.chunk < 0) throw std::logic_error("a pipeline pass with a negative number");
    microbatches = std::max(microbatches, s.op.microbatch + 1);
    chunk_count = std::max(chunk_count, s.op.chunk + 1);
  }
  struct Span {
    double first = 0, second = 0;
    bool seen = false;
  };
  const auto slot = [&](std::uint32_t rank, std::int32_t microbatch, std::int32_t chunk) {
    return (static_cast<std::size_t>(rank) * static_cast<std::size_t>(microbatches) +
            static_cast<std::size_t>(microbatch)) *
               static_cast<std::size_t>(chunk_count) +
           static_cast<std::size_t>(chunk);
  };
  std::vector<Span> spans(slot(static_cast<std::uint32_t>(step.ranks.size()), 0, 0));
  for (const OpSpan& s : step.ops) {
    if (s.first == kNoTask || s.last == kNoTask) continue;
    Span& span = spans[slot(s.rank, s.op.microbatch, s.op.chunk)];
    span.seen = true;
    if (s.op.forward)
      span.first = r.start[s.first];
    else if (s.op.frees())
      span.second = r.finish[s.last];
  }
  // Each rank's passes as the replay held them, in time order, counted as the schedule counts
  // its pass order (peak_chunk_mix).
  struct Edge {
    double t;
    PipeOp op;
  };
  std::vector<std::vector<Edge>> edges(step.ranks.size());
  for (std::uint32_t rank = 0; rank < step.ranks.size(); ++rank) {
    for (std::int32_t microbatch = 0; microbatch < microbatches; ++microbatch) {
      for (std::int32_t chunk = 0; chunk < chunk_count; ++chunk) {
        const Span& span = spans[slot(rank, microbatch, chunk)];
        if (!span.seen) continue;
        edges[rank].push_back({span.first, {true, microbatch, chunk}});
        edges[rank].push_back({span.second, {false, microbatch, chunk}});
      }
    }
  }
  for (std::uint32_t rank = 0; rank < edges.size(); ++rank) {
    std::vector<Edge>& e = edges[rank];
    if (e.empty()) continue;
    // At equal times a release comes before an acquisition: the next pass starts as one ends.
    std::sort(e.begin(), e.end(),
              [](const Edge& a, const Edge& b) { return a.t != b.t ? a.t < b.t : a.op.forward < b.op.forward; });
    std::vector<PipeOp> ops;
    ops.reserve(e.size());
    for (const Edge& x : e) ops.push_back(x.op);
    const std::vector<std::int64_t> mix = peak_chunk_mix(ops, chunks);
    const std::int64_t peak = std::accumulate(mix.begin(), mix.end(), std::int64_t{0});
    const auto stage = static_cast<std::size_t>(step.ranks[rank].stage);
    if (peak > peak_of[stage]) {
      peak_of[stage] = peak;
      out[stage] = mix;
    }
  }
  return out;
}

}  // namespace moesim
