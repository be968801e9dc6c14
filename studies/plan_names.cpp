// The names of the plan search's objectives and of a candidate's status, as the command line
// and the reports spell them.
#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"
#include "studies/plan_search.hpp"

namespace moesim {

PlanObjective parse_objective(const std::string& name) {
  if (name == "tokens_per_s") return PlanObjective::tokens_per_s;
  if (name == "mfu") return PlanObjective::mfu;
  if (name == "memory_headroom") return PlanObjective::memory_headroom;
  const std::vector<std::string> allowed = {"tokens_per_s", "mfu", "memory_headroom"};
  throw InputError("--objective", name,
                   "unknown objective" + did_you_mean(name, allowed, "allowed: " + comma_joined(allowed)));
}

std::string_view name_of(PlanObjective o) {
  switch (o) {
    case PlanObjective::tokens_per_s: return "tokens_per_s";
    case PlanObjective::mfu: return "mfu";
    case PlanObjective::memory_headroom: return "memory_headroom";
  }
  return "?";
}

std::string_view name_of(PlanStatus s) {
  switch (s) {
    case PlanStatus::refused: return "refused";
    case PlanStatus::pruned_by_memory: return "pruned_by_memory";
    case PlanStatus::pruned_by_bound: return "pruned_by_bound";
    case PlanStatus::replayed: return "replayed";
  }
  return "?";
}

}  // namespace moesim
