#include "studies/compare_stacks.hpp"

#include "models/common/errors.hpp"
#include "models/stacks/stack_preset.hpp"

namespace moesim {

PointOverrides stack_overrides(const std::string& stack, const std::string& design) {
  PointOverrides out{{"plan.stack", stack}};
  for (const StackValue& v : stack_presets().get(stack).values()) {
    if (!v.applies_to(design)) continue;
    out.emplace_back("plan." + std::string(v.path), nlohmann::json::parse(v.value));
  }
  return out;
}

StackComparison compare_stacks(const ScenarioSource& source, const std::string& design,
                               const std::vector<std::string>& stacks, int jobs) {
  StackComparison c;
  c.stacks = stacks;
  std::vector<PointOverrides> each;
  for (const auto& name : stacks) {
    try {
      each.push_back(stack_overrides(name, design));
    } catch (const UnknownNameError& e) {
      throw InputError("--stack", "", e.what());
    }
  }
  const PointList points(std::move(each));
  c.points = run_points(source, points, 0, points.size(), jobs, {});
  c.against_first.resize(c.points.points.size());
  const SweepPoint& first = c.points.points.front();
  for (std::size_t i = 1; i < c.points.points.size(); ++i) {
    if (first.ok && c.points.points[i].ok) c.against_first[i] = phase_differences(c.points.points[i], first);
  }
  return c;
}

}  // namespace moesim
