#include "reports/plan_report.hpp"

#include <algorithm>
#include <cmath>

#include "reports/sweep_report.hpp"
#include "reports/text_format.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

nlohmann::json record_json(const PlanSearchResult& result, const PlanRecord& r) {
  const PlanCandidate& c = result.candidates[r.candidate];
  nlohmann::json j = {{"candidate", r.candidate},
                      {"design", r.design},
                      {"values", c.values},
                      {"status", name_of(r.status)},
                      {"fits", r.fits},
                      {"peak_reserved_GiB", r.peak_reserved_GiB},
                      {"device_total_GiB", r.device_total_GiB},
                      {"headroom_GiB", r.headroom_GiB},
                      {"capacity_GiB", r.capacity_GiB},
                      {"bound_step_time_s", r.bound_step_s},
                      {"bound_tokens_per_s_per_gpu", r.bound_tokens_per_s_per_gpu}};
  if (r.status == PlanStatus::replayed) {
    j["step_time_s"] = r.step_time_s;
    j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
    j["mfu"] = r.mfu;
    j["largest_exposed_phase"] = r.largest_exposed_phase;
    j["largest_non_compute_phase"] = r.largest_non_compute_phase;
    j["largest_non_compute_s"] = r.largest_non_compute_s;
    j["rank"] = r.rank ? nlohmann::json(*r.rank) : nlohmann::json(nullptr);
  }
  return j;
}

nlohmann::json phases_json(const std::vector<PhaseDifference>& differences) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& d : differences) {
    phases.push_back({{"phase", d.phase},
                      {"best_s", d.best_s},
                      {"runner_up_s", d.runner_up_s},
                      {"difference_s", d.runner_up_s - d.best_s}});
  }
  return phases;
}

// The best plan against the best of the second place (plans tied with the best differ only in
// axes that do not change the step, and say nothing).
nlohmann::json best_vs_runner_up(const PlanSearchResult& result) {
  if (!result.runner_up) return nullptr;
  const std::size_t second = *result.runner_up;
  const nlohmann::json phases = phases_json(result.runner_up_phases);
  return {{"best", result.records[result.top[0]].candidate},
          {"runner_up", result.records[result.top[second]].candidate},
          {"step_time_difference_s",
           result.top_points[second].result->step_time_s - result.top_points[0].result->step_time_s},
          {"phases", phases}};
}

nlohmann::json best_vs_without_tp(const PlanSearchResult& result) {
  if (!result.best_without_tp) return nullptr;
  return {{"best", result.records[result.top[0]].candidate},
          {"runner_up", result.records[*result.best_without_tp].candidate},
          {"step_time_difference_s", result.without_tp_step_difference_s},
          {"phases", phases_json(result.without_tp_phases)}};
}

nlohmann::json families_json(const PlanSearchResult& result) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : result.families) {
    nlohmann::json j = {{"family", f.family}};
    if (f.record) {
      const PlanRecord& r = result.records[*f.record];
      j["candidate"] = r.candidate;
      j["design"] = r.design;
      j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
      j["relative_to_best"] = f.relative_to_best;
      j["phases"] = phases_json(f.phases);
    } else {
      for (const char* k : {"candidate", "design", "tokens_per_s_per_gpu", "relative_to_best"}) j[k] = nullptr;
      j["phases"] = nlohmann::json::array();
    }
    out.push_back(j);
  }
  return out;
}

std::string values_cell(const nlohmann::json& values) { return assignments_text(values, " "); }

}  // namespace

nlohmann::json plan_json(const std::string& scenario_name, const PlanSearchResult& result) {
  nlohmann::json space = nlohmann::json::array();
  for (const auto& a : result.space.axes) space.push_back({{"axis", a.name}, {"values", a.values}});
  nlohmann::json refusals = nlohmann::json::array();
  for (const auto& [reason, count] : result.refusals) refusals.push_back({{"reason", reason}, {"count", count}});
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& r : result.records) plans.push_back(record_json(result, r));
  nlohmann::json top = nlohmann::json::array();
  for (std::size_t k = 0; k < result.top.size(); ++k) {
    top.push_back({{"rank", *result.records[result.top[k]].rank},
                   {"candidate", result.records[result.top[k]].candidate},
                   {"point", sweep_point_json(result.top_points[k])}});
  }
  nlohmann::json frontier = nlohmann::json::array();
  for (const std::size_t i : result.frontier) frontier.push_back(result.records[i].candidate);
  const PlanCounts& n = result.counts;
  return {{"schema", "moesim-plan/1"},
          {"scenario", scenario_name},
          {"request",
           {{"gpus", result.space.gpus},
            {"gpus_per_node", result.space.gpus_per_node},
            {"global_batch_tokens", result.space.global_batch_tokens},
            {"objective", name_of(result.options.objective)},
            {"top_k", result.options.top_k},
            {"min_headroom_GiB", result.options.min_headroom_GiB}}},
          {"space", space},
          {"counts",
           {{"enumerated", n.enumerated},
            {"refused_by_rule", n.refused_by_rule},
            {"pruned_by_memory", n.pruned_by_memory},
            {"pruned_by_bound", n.pruned_by_bound},
            {"replayed", n.replayed}}},
          {"refusals", refusals},
          {"plans", plans},
          {"top", top},
          {"best_vs_runner_up", best_vs_runner_up(result)},
          {"best_vs_without_tp", best_vs_without_tp(result)},
          {"families", families_json(result)},
          {"frontier", frontier}};
}

std::string plan_csv(const nlohmann::json& doc) {
  std::string out =
      "candidate,design,values,status,fits,peak_reserved_GiB,headroom_GiB,bound_step_time_s,step_time_s,"
      "tokens_per_s_per_gpu,mfu,largest_exposed_phase,rank\n";
  const auto num = [](const nlohmann::json& p, const char* k) { return p.contains(k) ? p.at(k).dump() : ""; };
  for (const auto& p : doc.at("plans")) {
    out += p.at("candidate").dump() + "," + p.at("design").get<std::string>() + "," +
           csv_cell(values_cell(p.at("values"))) + "," + p.at("status").get<std::string>() + "," +
           (p.at("fits").get<bool>() ? "true" : "false") + ",";
    out += num(p, "peak_reserved_GiB") + "," + num(p, "headroom_GiB") + "," + num(p, "bound_step_time_s") + ",";
    out += num(p, "step_time_s") + "," + num(p, "tokens_per_s_per_gpu") + "," + num(p, "mfu") + ",";
    out += (p.contains("largest_exposed_phase") ? p.at("largest_exposed_phase").get<std::string>() : "") + ",";
    out += p.contains("rank") && !p.at("rank").is_null() ? p.at("rank").dump() : "";
    out += "\n";
  }
  return out;
}

}  // namespace moesim
