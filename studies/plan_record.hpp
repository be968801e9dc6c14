// One plan search candidate's record (studies/plan_search.hpp): where the search left it and
// what screening and, if it ran, the replay found. Apart from the search so that what reads
// records (the memory frontier, the outcomes that travel between processes) needs nothing else.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace moesim {

enum class PlanStatus { refused, pruned_by_memory, pruned_by_bound, replayed };
std::string_view name_of(PlanStatus s);

// One candidate that passed the rules: what screening found, and the replay's numbers if it ran.
struct PlanRecord {
  std::size_t candidate = 0;
  PlanStatus status = PlanStatus::refused;
  std::string design;  // design_name() of the composed plan
  bool fits = false;
  double peak_reserved_GiB = 0, device_total_GiB = 0, headroom_GiB = 0, capacity_GiB = 0;
  double bound_step_s = 0;
  double bound_tokens_per_s_per_gpu = 0;  // the throughput the bound allows
  double score_bound = 0;                 // the objective's best possible value given the bound
  double score_scale = 0;                 // score_bound x bound_step_s for the time objectives (0 for headroom)
  // Replayed only:
  double step_time_s = 0, tokens_per_s_per_gpu = 0, mfu = 0, score = 0;
  std::string largest_exposed_phase;
  std::string largest_non_compute_phase;  // communication or idle: what the plan waits for
  double largest_non_compute_s = 0;
  // 1-based place in the top K; plans of equal score (differing only in axes that do not change
  // the step) share a place, and the top K holds K places.
  std::optional<std::size_t> rank;
};

}  // namespace moesim
