#include "studies/plan_outcomes.hpp"

#include "models/common/units.hpp"

namespace moesim {

double worst_headroom_GiB(const MemoryLedger& ledger) { return ledger.stages[ledger.worst_stage].headroom / kGiB; }

nlohmann::json screened_json(const Screened& x) {
  if (!x.record) return nlohmann::json{{"rejected", x.rejected}};
  const PlanRecord& r = *x.record;
  return nlohmann::json{{"split", x.split},
                        {"candidate", r.candidate},
                        {"design", r.design},
                        {"fits", r.fits},
                        {"peak", r.peak_reserved_GiB},
                        {"device", r.device_total_GiB},
                        {"headroom", r.headroom_GiB},
                        {"capacity", r.capacity_GiB},
                        {"bound", r.bound_step_s},
                        {"score_bound", r.score_bound},
                        {"scale", r.score_scale},
                        {"bound_tps", r.bound_tokens_per_s_per_gpu}};
}

Screened screened_from_json(const nlohmann::json& j) {
  Screened x;
  if (j.contains("rejected")) {
    x.rejected = j.at("rejected").get<std::string>();
    return x;
  }
  x.split = j.at("split").get<std::vector<std::int64_t>>();
  PlanRecord r;
  r.candidate = j.at("candidate").get<std::size_t>();
  r.design = j.at("design").get<std::string>();
  r.fits = j.at("fits").get<bool>();
  r.status = r.fits ? PlanStatus::pruned_by_bound : PlanStatus::pruned_by_memory;
  r.peak_reserved_GiB = j.at("peak").get<double>();
  r.device_total_GiB = j.at("device").get<double>();
  r.headroom_GiB = j.at("headroom").get<double>();
  r.capacity_GiB = j.at("capacity").get<double>();
  r.bound_step_s = j.at("bound").get<double>();
  r.score_bound = j.at("score_bound").get<double>();
  r.score_scale = j.at("scale").get<double>();
  r.bound_tokens_per_s_per_gpu = j.at("bound_tps").get<double>();
  x.record = r;
  return x;
}

Replayed replayed(SweepPoint&& point) {
  Replayed x;
  x.ok = point.ok;
  if (x.ok) {
    const StepResult& res = *point.result;
    x.step_time_s = res.step_time_s;
    x.tokens_per_s_per_gpu = res.tokens_per_s_per_gpu;
    x.mfu = res.mfu;
    x.fits = !res.ledger.oom;
    x.headroom_GiB = worst_headroom_GiB(res.ledger);
    x.largest_exposed_phase = largest_exposed(res);
    x.non_compute = largest_exposed_non_compute(res);
  }
  x.point = std::move(point);
  return x;
}

nlohmann::json replayed_json(const Replayed& x) {
  return {{"ok", x.ok},
          {"fits", x.fits},
          {"step", x.step_time_s},
          {"tps", x.tokens_per_s_per_gpu},
          {"mfu", x.mfu},
          {"headroom", x.headroom_GiB},
          {"largest", x.largest_exposed_phase},
          {"wait", x.non_compute.phase},
          {"wait_s", x.non_compute.s}};
}

Replayed replayed_from_json(const nlohmann::json& j) {
  Replayed x;
  x.ok = j.at("ok").get<bool>();
  x.fits = j.at("fits").get<bool>();
  x.step_time_s = j.at("step").get<double>();
  x.tokens_per_s_per_gpu = j.at("tps").get<double>();
  x.mfu = j.at("mfu").get<double>();
  x.headroom_GiB = j.at("headroom").get<double>();
  x.largest_exposed_phase = j.at("largest").get<std::string>();
  x.non_compute = {j.at("wait").get<std::string>(), j.at("wait_s").get<double>()};
  return x;
}

}  // namespace moesim
