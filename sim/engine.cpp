#include "sim/engine.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>

namespace moesim {

namespace {

struct Unit {               // one running thing: a task, or a collective's members moving together
  std::uint32_t first = 0;  // members are members_[first, first + count)
  std::uint32_t count = 0;
  double remaining = 0;
  double rate = 1;
  double updated = 0;
  std::uint32_t version = 0;
  Demand demand;
};

struct Event {
  double time;
  std::uint64_t seq;
  std::uint32_t unit;
  std::uint32_t version;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

class Engine {
 public:
  Engine(const TaskGraph& g, const ResourceSharing& sharing) : graph_(g), sharing_(sharing) {
    const std::size_t n = g.size();
    result_.start.assign(n, 0);
    result_.finish.assign(n, 0);
    result_.cause.assign(n, kNoTask);
    pending_.assign(n, 0);
    stream_next_.assign(n, kNoTask);
    const auto slots = static_cast<std::size_t>(g.ranks()) * static_cast<std::size_t>(StreamKind::count);
    std::vector<TaskId> last(slots, kNoTask);
    for (TaskId id = 0; id < n; ++id) {
      const auto& t = g.task(id);
      if (!stream_is_ordered(t.stream)) continue;
      const auto slot = static_cast<std::size_t>(t.rank) * static_cast<std::size_t>(StreamKind::count) +
                        static_cast<std::size_t>(t.stream);
      if (last[slot] != kNoTask) {
        stream_next_[last[slot]] = id;
        ++pending_[id];
      }
      last[slot] = id;
    }
    for (TaskId id = 0; id < n; ++id) {
      for (auto [e, end] = boost::out_edges(static_cast<DagStorage::vertex_descriptor>(id), g.dag()); e != end; ++e)
        ++pending_[boost::target(*e, g.dag())];
    }
    group_members_.resize(g.groups());
    group_ready_.assign(g.groups(), 0);
    for (TaskId id = 0; id < n; ++id) {
      if (g.task(id).group != kNoGroup) group_members_[g.task(id).group].push_back(id);
    }
    running_.resize(g.ranks());
    mix_.resize(g.ranks());
    units_.reserve(n);
    members_.reserve(n);
  }

  ReplayResult run() {
    for (TaskId id = 0; id < graph_.size(); ++id) {
      if (pending_[id] == 0) became_ready(id, kNoTask);
    }
    flush_starts();
    std::size_t done = 0;
    while (!heap_.empty()) {
      const Event ev = heap_.top();
      heap_.pop();
      Unit& u = units_[ev.unit];
      if (ev.version != u.version) continue;
      now_ = ev.time;
      finish_unit(ev.unit);
      done += units_[ev.unit].count;
      flush_starts();
    }
    if (done != graph_.size())
      throw std::logic_error("replay stalled: a dependency cycle or an incomplete collective group");
    return std::move(result_);
  }

 private:
  void became_ready(TaskId id, TaskId cause) {
    result_.cause[id] = cause;
    const auto group = graph_.task(id).group;
    if (group == kNoGroup) {
      to_start_.push_back({id, false});
      return;
    }
    if (++group_ready_[group] == group_members_[group].size()) to_start_.push_back({group, true});
  }

  void flush_starts() {
    if (to_start_.empty()) return;
    touched_.clear();
    for (const auto& [what, is_group] : to_start_) {
      const auto uid = static_cast<std::uint32_t>(units_.size());
      Unit u;
      u.first = static_cast<std::uint32_t>(members_.size());
      if (is_group)
        members_.insert(members_.end(), group_members_[what].begin(), group_members_[what].end());
      else
        members_.push_back(what);
      u.count = static_cast<std::uint32_t>(members_.size()) - u.first;
      const Task& t0 = graph_.task(members_[u.first]);
      u.demand = sharing_.demand_of(t0);
      for (TaskId m : members(u)) {
        u.remaining = std::max(u.remaining, graph_.task(m).work_s);
        result_.start[m] = now_;
        const std::uint32_t rank = graph_.task(m).rank;
        running_[rank].push_back(uid);
        mix_[rank].add(u.demand, +1);
        touched_.push_back(rank);
      }
      u.updated = now_;
      u.rate = 0;  // set by rerate
      units_.push_back(u);
    }
    to_start_.clear();
    rerate(touched_);
  }

  struct Range {
    const TaskId* b;
    const TaskId* e;
    const TaskId* begin() const { return b; }
    const TaskId* end() const { return e; }
  };
  Range members(const Unit& u) const { return {members_.data() + u.first, members_.data() + u.first + u.count}; }

  void finish_unit(std::uint32_t uid) {
    Unit& u = units_[uid];
    touched_.clear();
    for (TaskId m : members(u)) {
      result_.finish[m] = now_;
      if (now_ >= result_.makespan) {
        result_.makespan = now_;
        result_.last = m;
      }
      const std::uint32_t rank = graph_.task(m).rank;
      auto& list = running_[rank];
      list.erase(std::find(list.begin(), list.end(), uid));
      mix_[rank].add(u.demand, -1);
      touched_.push_back(rank);
    }
    u.version = std::numeric_limits<std::uint32_t>::max();
    for (TaskId m : members(u)) {
      for (auto [e, end] = boost::out_edges(static_cast<DagStorage::vertex_descriptor>(m), graph_.dag()); e != end; ++e)
        release(static_cast<TaskId>(boost::target(*e, graph_.dag())), m);
      if (stream_next_[m] != kNoTask) release(stream_next_[m], m);
    }
    rerate(touched_);
  }

  void release(TaskId id, TaskId cause) {
    if (--pending_[id] == 0) became_ready(id, cause);
  }

  void rerate(std::vector<std::uint32_t>& ranks) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    auto& units = rerate_units_;
    units.clear();
    for (auto rank : ranks) units.insert(units.end(), running_[rank].begin(), running_[rank].end());
    std::sort(units.begin(), units.end());
    units.erase(std::unique(units.begin(), units.end()), units.end());
    for (auto uid : units) {
      Unit& u = units_[uid];
      double rate = std::numeric_limits<double>::infinity();
      for (TaskId m : members(u)) rate = std::min(rate, sharing_.rate(mix_[graph_.task(m).rank], u.demand));
      if (u.rate > 0) u.remaining = std::max(0.0, u.remaining - (now_ - u.updated) * u.rate);
      if (rate == u.rate && u.version != 0) {
        u.updated = now_;
        continue;  // unchanged: its event stands
      }
      u.rate = rate;
      u.updated = now_;
      ++u.version;
      heap_.push({now_ + u.remaining / u.rate, seq_++, uid, u.version});
    }
  }

  const TaskGraph& graph_;
  const ResourceSharing& sharing_;
  ReplayResult result_;
  std::vector<std::uint32_t> pending_;
  std::vector<TaskId> stream_next_;
  std::vector<std::vector<TaskId>> group_members_;
  std::vector<std::size_t> group_ready_;
  std::vector<std::vector<std::uint32_t>> running_;  // per rank: running unit ids
  std::vector<RunningMix> mix_;                      // per rank: what those units ask of it
  std::vector<Unit> units_;
  std::vector<TaskId> members_;
  std::vector<std::pair<std::uint32_t, bool>> to_start_;  // (task, false) or (group, true)
  std::vector<std::uint32_t> touched_;
  std::vector<std::uint32_t> rerate_units_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
  std::uint64_t seq_ = 0;
  double now_ = 0;
};

}  // namespace

ReplayResult replay(const TaskGraph& graph, const ResourceSharing& sharing) { return Engine(graph, sharing).run(); }

}  // namespace moesim
