#include "studies/plan_phases.hpp"

#include <algorithm>
#include <cmath>

namespace moesim {

std::string largest_exposed(const StepResult& r) {
  std::string name = "idle";
  double most = r.idle_s;
  for (std::size_t p = 0; p < kPhases; ++p) {
    if (r.exposed_s[p] > most) {
      most = r.exposed_s[p];
      name = name_of(static_cast<PhaseTag>(p));
    }
  }
  return name;
}

ExposedPhase largest_exposed_non_compute(const StepResult& r) {
  ExposedPhase out{"idle", r.idle_s};
  for (std::size_t p = 0; p < kPhases; ++p) {
    const auto phase = static_cast<PhaseTag>(p);
    // The compute stream's own phases; the rest is communication exposed on it.
    const bool compute = phase == PhaseTag::forward || phase == PhaseTag::backward || phase == PhaseTag::recompute ||
                         phase == PhaseTag::accumulate || phase == PhaseTag::optimizer;
    if (!compute && r.exposed_s[p] > out.s) out = {name_of(phase), r.exposed_s[p]};
  }
  return out;
}

std::vector<std::size_t> shared_places(const std::vector<double>& scores) {
  std::vector<std::size_t> places;
  for (std::size_t i = 0; i < scores.size(); ++i)
    places.push_back(i > 0 && scores[i] == scores[i - 1] ? places.back() : (places.empty() ? 1 : places.back() + 1));
  return places;
}

std::vector<PhaseDifference> phase_differences(const SweepPoint& best_point, const SweepPoint& second_point) {
  const StepResult &best = *best_point.result, &second = *second_point.result;
  std::vector<PhaseDifference> out;
  const auto row = [&](std::string name, double a, double b) {
    if (a != b) out.push_back({std::move(name), a, b});
  };
  for (std::size_t p = 0; p < kPhases; ++p)
    row(name_of(static_cast<PhaseTag>(p)), best.exposed_s[p], second.exposed_s[p]);
  row("idle", best.idle_s, second.idle_s);
  std::stable_sort(out.begin(), out.end(), [](const PhaseDifference& x, const PhaseDifference& y) {
    return std::abs(x.runner_up_s - x.best_s) > std::abs(y.runner_up_s - y.best_s);
  });
  return out;
}

}  // namespace moesim
