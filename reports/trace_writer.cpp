#include "reports/trace_writer.hpp"

#include <nlohmann/json.hpp>

namespace moesim {

namespace {
std::vector<bool> kept_ranks(const TaskGraph& g, const std::vector<std::uint32_t>& ranks) {
  std::vector<bool> kept(g.ranks(), ranks.empty());
  for (const std::uint32_t r : ranks)
    if (r < kept.size()) kept[r] = true;
  return kept;
}

// A task is written when its rank is kept and it took time (a zero-length task draws nothing).
bool written(const Simulation& sim, const std::vector<bool>& kept, TaskId id) {
  return kept[sim.step.graph.task(id).rank] && sim.replay.finish[id] - sim.replay.start[id] > 0;
}
}  // namespace

std::size_t trace_event_count(const Simulation& sim, const std::vector<std::uint32_t>& ranks) {
  const TaskGraph& g = sim.step.graph;
  const std::vector<bool> kept = kept_ranks(g, ranks);
  std::size_t events = 0;
  for (std::uint32_t r = 0; r < g.ranks(); ++r) events += kept[r] ? 1 + static_cast<std::size_t>(StreamKind::count) : 0;
  for (TaskId id = 0; id < g.size(); ++id) events += written(sim, kept, id) ? 1 : 0;
  return events;
}

std::string trace_json(const Simulation& sim, const std::vector<std::uint32_t>& ranks) {
  const TaskGraph& g = sim.step.graph;
  const std::vector<bool> kept = kept_ranks(g, ranks);
  nlohmann::json events = nlohmann::json::array();
  for (std::uint32_t r = 0; r < g.ranks(); ++r) {
    if (!kept[r]) continue;
    const SimRank& sr = sim.step.ranks[r];
    events.push_back(
        {{"ph", "M"},
         {"name", "process_name"},
         {"pid", r},
         {"args", {{"name", "stage " + std::to_string(sr.stage) + " rank " + std::to_string(sr.stage_rank)}}}});
    for (int s = 0; s < static_cast<int>(StreamKind::count); ++s) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", r},
                        {"tid", s},
                        {"args", {{"name", name_of(static_cast<StreamKind>(s))}}}});
    }
  }
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    if (!written(sim, kept, id)) continue;
    const double dur = sim.replay.finish[id] - sim.replay.start[id];
    nlohmann::json args = {{"phase", name_of(t.phase)}, {"kind", name_of(t.kind)}};
    if (t.microbatch >= 0) args["microbatch"] = t.microbatch;
    if (t.layer >= 0) args["layer"] = t.layer;
    if (is_communication(t.kind)) {
      args["nvlink_bytes"] = t.link_bytes[static_cast<std::size_t>(LinkClass::nvlink)];
      args["nic_bytes"] = t.link_bytes[static_cast<std::size_t>(LinkClass::nic)];
    }
    events.push_back({{"ph", "X"},
                      {"name", t.label},
                      {"cat", name_of(t.phase)},
                      {"pid", t.rank},
                      {"tid", static_cast<int>(t.stream)},
                      {"ts", sim.replay.start[id] * 1e6},
                      {"dur", dur * 1e6},
                      {"args", args}});
  }
  return nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}}).dump() + "\n";
}

}  // namespace moesim
