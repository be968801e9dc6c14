#include "sim/engine.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/event_heap.hpp"
#include "sim/short_list.hpp"

namespace moesim {

namespace {

struct Unit {  // one running thing: a task, or a collective's members moving together
  double remaining = 0;
  double rate = 0;  // 0 until first rated
  double updated = 0;
  // One member: `first` is the task. A collective group's members: group_members_[first, first + count).
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  std::uint32_t rank = 0;  // the first member's rank (a one-member unit is rated without a member look-up)
  Demand demand;
};

// Each event (a unit finishing, or the replay's start) is handled in one pass: the unit ends, the
// tasks it released start, and then the units it may have sped up or slowed down are re-rated
// once: the new ones, and those on a touched rank whose running mix changed (a rate is a function
// of the mix, so where the event left the mix as it was, every rate stands). Ranks and units are
// de-duplicated by epoch stamps (the event's number), not by sorting.
// One engine per thread is kept between replays: a sweep thread or a repeated benchmark replays
// graph after graph, and with the buffers warm a replay allocates (almost) nothing.
class Engine {
 public:
  void run(const TaskGraph& g, const ResourceSharing& sharing, ReplayResult& out) {
    graph_ = &g;
    dag_ = &g.dag();
    sharing_ = &sharing;
    std::swap(result_, out);  // the caller's buffers, handed back filled
    try {
      setup(g);
      replay_all();
    } catch (...) {
      std::swap(result_, out);
      throw;
    }
    std::swap(result_, out);
  }

 private:
  void setup(const TaskGraph& g) {
    const std::size_t n = g.size();
    // Every task gets its start, finish and cause before a replay returns (or it throws), so
    // these are sized, not cleared.
    result_.start.resize(n);
    result_.finish.resize(n);
    result_.cause.resize(n);
    result_.events.clear();
    result_.events.reserve(2 * n);
    result_.makespan = 0;
    result_.last = kNoTask;
    now_ = 0;
    epoch_ = 0;
    nodes_.resize(n);
    // One pass: each task's dependencies (the graph counted them as it was built) and its
    // collective group's size.
    group_first_.assign(static_cast<std::size_t>(g.groups()) + 1, 0);
    for (TaskId id = 0; id < n; ++id) {
      const std::uint32_t group = g.task(id).group;
      nodes_[id] = {g.waits(id), g.stream_next(id), group};
      if (group != kNoGroup) ++group_first_[group + 1];
    }
    // Members of each collective group, grouped by a counting sort (offsets into one array).
    for (std::size_t k = 1; k < group_first_.size(); ++k) group_first_[k] += group_first_[k - 1];
    group_members_.resize(group_first_.back());
    std::vector<std::uint32_t>& fill = group_fill_;
    fill.assign(group_first_.begin(), group_first_.end() - 1);
    for (TaskId id = 0; id < n; ++id) {
      const std::uint32_t group = nodes_[id].group;
      if (group == kNoGroup) continue;
      group_members_[fill[group]++] = id;
      // A group of one starts and ends as a task of no group does: it is replayed as one.
      if (group_first_[group + 1] - group_first_[group] == 1) nodes_[id].group = kNoGroup;
    }
    group_ready_.assign(g.groups(), 0);
    running_.resize(g.ranks());
    for (auto& list : running_) list.clear();
    mix_.assign(g.ranks(), RunningMix{});
    mix_before_.resize(g.ranks());
    rank_epoch_.assign(g.ranks(), 0);
    units_.clear();
    unit_epoch_.clear();
    free_units_.clear();
    to_start_.clear();
    rerate_units_.clear();
    heap_.reset();
  }

  void replay_all() {
    begin_event();
    for (TaskId id = 0; id < graph_->size(); ++id) {
      if (nodes_[id].pending == 0) became_ready(id, kNoTask);
    }
    start_ready();
    rerate();
    std::size_t done = 0;
    while (!heap_.empty()) {
      const std::uint32_t uid = heap_.top();
      now_ = heap_.top_time();
      heap_.pop();
      begin_event();
      finish_unit(uid);
      done += units_[uid].count;
      free_units_.push_back(uid);
      start_ready();
      rerate();
    }
    if (done != graph_->size())
      throw std::logic_error("replay stalled: a dependency cycle or an incomplete collective group");
  }

 private:
  void begin_event() {
    ++epoch_;
    touched_.clear();
    started_.clear();
  }

  // Called before the event changes `rank`'s mix.
  void touch(std::uint32_t rank) {
    if (rank_epoch_[rank] == epoch_) return;
    rank_epoch_[rank] = epoch_;
    touched_.push_back(rank);
    mix_before_[rank] = mix_[rank];
  }

  void became_ready(TaskId id, TaskId cause) {
    result_.cause[id] = cause;
    const auto group = nodes_[id].group;
    if (group == kNoGroup) {
      to_start_.push_back({id, false});
      return;
    }
    if (++group_ready_[group] == group_first_[group + 1] - group_first_[group]) to_start_.push_back({group, true});
  }

  // Inlined into the event loop (as rerate() is): each runs once per event, and as calls their
  // register saves and restores were a fixed cost per event (callgrind: inlining both takes 1.0
  // to 1.6% of the instructions of the Figure 8 points and the 4096-GPU bench).
  [[gnu::always_inline]] void start_ready() {
    for (auto [what, is_group] : to_start_) {
      const std::uint32_t uid = new_unit();
      Unit& u = units_[uid];
      u.updated = now_;
      // Groups of one were made plain tasks in setup(): a group here has two or more members.
      if (!is_group) {
        u.first = what;
        u.count = 1;
        const Task& t = graph_->task(what);
        u.rank = t.rank;
        u.demand = sharing_->demand_of(t);
        u.remaining = std::max(u.remaining, t.work_s);
        start_member(uid, u, what, t.rank);
      } else {
        u.first = group_first_[what];
        u.count = group_first_[what + 1] - group_first_[what];
        const Task& lead = graph_->task(group_members_[u.first]);
        u.rank = lead.rank;
        u.demand = sharing_->demand_of(lead);
        for (TaskId m : members(u)) {
          const Task& t = graph_->task(m);
          u.remaining = std::max(u.remaining, t.work_s);
          start_member(uid, u, m, t.rank);
        }
      }
      started_.push_back(uid);
    }
    to_start_.clear();
  }

  void start_member(std::uint32_t uid, const Unit& u, TaskId m, std::uint32_t rank) {
    result_.start[m] = now_;
    result_.events.push_back({m, true, now_});
    touch(rank);
    running_[rank].push_back(uid);
    mix_[rank].add(u.demand, +1);
  }

  struct Range {
    const TaskId* b;
    const TaskId* e;
    const TaskId* begin() const { return b; }
    const TaskId* end() const { return e; }
  };
  // A group's members (units of two or more).
  Range members(const Unit& u) const {
    return {group_members_.data() + u.first, group_members_.data() + u.first + u.count};
  }

  // A finished unit's slot is reused by the next unit to start (ids never order anything: the
  // heap orders by time and sequence number, the running lists by start), so the units in use
  // stay few and in cache instead of one per task.
  std::uint32_t new_unit() {
    if (free_units_.empty()) {
      units_.emplace_back();
      unit_epoch_.push_back(0);
      heap_.reserve_units(units_.size());
      return static_cast<std::uint32_t>(units_.size() - 1);
    }
    const std::uint32_t uid = free_units_.back();
    free_units_.pop_back();
    // The starter sets every other field; the slot's re-rate epoch is an earlier event's (units
    // are picked for re-rating only after this event has started its units).
    units_[uid].remaining = 0;
    units_[uid].rate = 0;
    return uid;
  }

  void finish_unit(std::uint32_t uid) {
    const Unit& u = units_[uid];
    if (u.count == 1) {
      const TaskId m = u.first;
      end_member(uid, u, m, u.rank);
      release_successors(m);
      return;
    }
    for (TaskId m : members(u)) end_member(uid, u, m, graph_->task(m).rank);
    for (TaskId m : members(u)) release_successors(m);
  }

  void end_member(std::uint32_t uid, const Unit& u, TaskId m, std::uint32_t rank) {
    result_.finish[m] = now_;
    result_.events.push_back({m, false, now_});
    if (now_ >= result_.makespan) {
      result_.makespan = now_;
      result_.last = m;
    }
    touch(rank);
    auto& list = running_[rank];
    remove_in_order(list, uid);
    mix_[rank].add(u.demand, -1);
  }

  void release_successors(TaskId m) {
    for (auto [e, end] = boost::out_edges(static_cast<DagStorage::vertex_descriptor>(m), *dag_); e != end; ++e)
      release(static_cast<TaskId>(boost::target(*e, *dag_)), m);
    if (nodes_[m].stream_next != kNoTask) release(nodes_[m].stream_next, m);
  }

  void release(TaskId id, TaskId cause) {
    if (--nodes_[id].pending == 0) became_ready(id, cause);
  }

  // Re-rates the new units and those on touched ranks whose mix changed; a unit whose rate
  // changed (or that is new) gets its finish event (re)scheduled.
  [[gnu::always_inline]] void rerate() {
    if (touched_.size() == 1) {  // the common case: one rank's units, distinct already
      const std::uint32_t rank = touched_.front();
      if (!(mix_[rank] == mix_before_[rank])) {
        for (auto uid : running_[rank]) rerate_unit(uid);
        return;
      }
      for (auto uid : started_) rerate_unit(uid);
      return;
    }
    rerate_units_.clear();
    const auto pick = [&](std::uint32_t uid) {
      if (unit_epoch_[uid] == epoch_) return;
      unit_epoch_[uid] = epoch_;
      rerate_units_.push_back(uid);
    };
    for (auto rank : touched_) {
      if (mix_[rank] == mix_before_[rank]) continue;
      for (auto uid : running_[rank]) pick(uid);
    }
    for (auto uid : started_) pick(uid);
    for (auto uid : rerate_units_) rerate_unit(uid);
  }

  void rerate_unit(std::uint32_t uid) {
    Unit& u = units_[uid];
    double rate = std::numeric_limits<double>::infinity();
    if (u.count == 1) {
      rate = std::min(rate, sharing_->rate(mix_[u.rank], u.demand));
    } else {
      for (TaskId m : members(u)) rate = std::min(rate, sharing_->rate(mix_[graph_->task(m).rank], u.demand));
    }
    if (u.rate > 0) u.remaining = std::max(0.0, u.remaining - (now_ - u.updated) * u.rate);
    u.updated = now_;
    if (rate == u.rate && heap_.contains(uid)) return;  // unchanged: its event stands
    u.rate = rate;
    heap_.schedule(uid, now_ + u.remaining / u.rate);
  }

  const TaskGraph* graph_ = nullptr;
  const DagStorage* dag_ = nullptr;  // the graph's edges, looked up once (TaskGraph::dag() is out of line)
  const ResourceSharing* sharing_ = nullptr;
  ReplayResult result_;
  // Per task, what the replay reads of it as it releases and starts tasks, in one place (one cache
  // line brings all of it: a large step's per-task arrays do not stay in cache).
  struct Node {
    std::uint32_t pending = 0;       // dependencies not finished yet (edges and stream order)
    TaskId stream_next = kNoTask;    // the next task on its ordered stream
    std::uint32_t group = kNoGroup;  // its collective group of two or more members
  };
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> group_first_;  // members of group k: group_members_[first[k], first[k + 1])
  std::vector<TaskId> group_members_;
  std::vector<std::uint32_t> group_fill_;  // setup's scratch
  std::vector<std::uint32_t> group_ready_;
  std::vector<std::vector<std::uint32_t>> running_;  // per rank: running unit ids
  std::vector<RunningMix> mix_;                      // per rank: what those units ask of it
  std::vector<RunningMix> mix_before_;               // per touched rank: its mix when the event began
  std::vector<Unit> units_;
  std::vector<std::uint32_t> free_units_;                 // finished units' slots, to reuse
  std::vector<std::pair<std::uint32_t, bool>> to_start_;  // (task, false) or (group, true)
  std::uint32_t epoch_ = 0;                               // the event being handled
  std::vector<std::uint32_t> rank_epoch_;                 // per rank: the last event that touched it
  std::vector<std::uint32_t> unit_epoch_;                 // per unit: the last event that re-rated it
  std::vector<std::uint32_t> touched_;                    // ranks the current event touched
  std::vector<std::uint32_t> started_;                    // units the current event started
  std::vector<std::uint32_t> rerate_units_;
  EventHeap heap_;
  double now_ = 0;
};

}  // namespace

void replay(const TaskGraph& graph, const ResourceSharing& sharing, ReplayResult& out) {
  thread_local Engine engine;
  engine.run(graph, sharing, out);
}

ReplayResult replay(const TaskGraph& graph, const ResourceSharing& sharing) {
  ReplayResult out;
  replay(graph, sharing, out);
  return out;
}

}  // namespace moesim
