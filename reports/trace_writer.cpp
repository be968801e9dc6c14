#include "reports/trace_writer.hpp"

#include <nlohmann/json.hpp>

namespace moesim {

std::string trace_json(const Simulation& sim) {
  const TaskGraph& g = sim.step.graph;
  nlohmann::json events = nlohmann::json::array();
  for (std::uint32_t r = 0; r < g.ranks(); ++r) {
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
    const double dur = sim.replay.finish[id] - sim.replay.start[id];
    if (dur <= 0) continue;
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
