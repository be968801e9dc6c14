#include "sim/timeline_metrics.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace moesim {

namespace {

bool is_compute_stream(StreamKind s) { return s == StreamKind::compute || s == StreamKind::side; }

// Exclusive split of [0, step] for one rank: compute wins over communication, communication over
// idle; among communications, the one that started first is charged.
void split_rank(const TaskGraph& g, const ReplayResult& r, const std::vector<TaskId>& ids, double step,
                RankTimeline& out) {
  struct Edge {
    double t;
    int delta;
    TaskId id;
  };
  std::vector<Edge> edges;
  edges.reserve(ids.size() * 2);
  for (TaskId id : ids) {
    if (r.finish[id] <= r.start[id]) continue;
    edges.push_back({r.start[id], +1, id});
    edges.push_back({r.finish[id], -1, id});
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.t != b.t ? a.t < b.t : a.delta < b.delta; });
  std::vector<TaskId> active;
  double t = 0;
  auto charge = [&](double until) {
    if (until <= t) return;
    const double dt = until - t;
    TaskId pick = kNoTask;
    for (TaskId id : active) {
      if (is_compute_stream(g.task(id).stream)) {
        pick = id;
        break;
      }
    }
    if (pick == kNoTask) {
      for (TaskId id : active) {
        if (pick == kNoTask || r.start[id] < r.start[pick]) pick = id;
      }
    }
    if (pick == kNoTask) {
      out.idle += dt;
    } else {
      out.exposed[static_cast<std::size_t>(g.task(pick).phase)] += dt;
      out.exposed_by_kind[static_cast<std::size_t>(g.task(pick).kind)] += dt;
    }
    t = until;
  };
  for (const Edge& e : edges) {
    charge(e.t);
    if (e.delta > 0)
      active.push_back(e.id);
    else
      active.erase(std::find(active.begin(), active.end(), e.id));
  }
  charge(step);
}

}  // namespace

TimelineMetrics measure(const TaskGraph& g, const ReplayResult& r) {
  TimelineMetrics m;
  m.step_time = r.makespan;
  m.ranks.resize(g.ranks());
  std::vector<std::vector<TaskId>> by_rank(g.ranks());
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    by_rank[t.rank].push_back(id);
    RankTimeline& rt = m.ranks[t.rank];
    rt.busy[static_cast<std::size_t>(t.phase)] += r.finish[id] - r.start[id];
    rt.finish = std::max(rt.finish, r.finish[id]);
    if (is_communication(t.kind)) {
      for (std::size_t l = 0; l < kLinkClasses; ++l) rt.bytes[static_cast<std::size_t>(t.coll)][l] += t.link_bytes[l];
    }
  }
  for (std::uint32_t rank = 0; rank < g.ranks(); ++rank) split_rank(g, r, by_rank[rank], r.makespan, m.ranks[rank]);
  if (r.last != kNoTask) m.critical_rank = g.task(r.last).rank;

  // Critical path: follow each task back to the predecessor that released it.
  for (TaskId id = r.last; id != kNoTask; id = r.cause[id]) {
    m.critical_path[static_cast<std::size_t>(g.task(id).phase)] += r.finish[id] - r.start[id];
  }
  return m;
}

std::vector<std::int64_t> measured_chunks_in_flight(const BuiltStep& step, const ReplayResult& r, std::int64_t stages) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(stages), 0);
  std::map<std::tuple<std::uint32_t, int, int>, std::pair<double, double>> spans;  // (rank, microbatch, chunk)
  for (const OpSpan& s : step.ops) {
    if (s.first == kNoTask || s.last == kNoTask) continue;
    auto& span = spans[{s.rank, s.op.microbatch, s.op.chunk}];
    if (s.op.forward)
      span.first = r.start[s.first];
    else
      span.second = r.finish[s.last];
  }
  std::map<std::uint32_t, std::vector<std::pair<double, int>>> edges;
  for (const auto& [key, span] : spans) {
    edges[std::get<0>(key)].push_back({span.first, +1});
    edges[std::get<0>(key)].push_back({span.second, -1});
  }
  for (auto& [rank, e] : edges) {
    // At equal times a release comes before an acquisition: the next pass starts as one ends.
    std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int held = 0, peak = 0;
    for (const auto& [t, d] : e) peak = std::max(peak, held += d);
    auto& slot = out[static_cast<std::size_t>(step.ranks[rank].stage)];
    slot = std::max<std::int64_t>(slot, peak);
  }
  return out;
}

}  // namespace moesim
