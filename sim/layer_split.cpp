#include "sim/layer_split.hpp"

#include <limits>

#include "models/arch/architecture.hpp"
#include "sim/step_bound.hpp"

namespace moesim {

std::vector<std::int64_t> balanced_layer_split(const Architecture& arch, const ParallelPlan& plan,
                                               const CostBook& costs) {
  const std::vector<double> unit = unit_compute_times(arch, plan, costs);  // embedding, layers, head
  const auto layers = static_cast<std::size_t>(arch.num_layers);
  const auto parts = static_cast<std::size_t>(plan.pp * plan.model_chunks());
  std::vector<double> prefix(layers + 1, 0.0);
  for (std::size_t l = 0; l < layers; ++l) prefix[l + 1] = prefix[l] + unit[l + 1];
  // Layers [from, to) as virtual stage `part` (0-based): the edges weigh on the first and last.
  const auto cost = [&](std::size_t from, std::size_t to, std::size_t part) {
    return prefix[to] - prefix[from] + (part == 0 ? unit.front() : 0.0) + (part + 1 == parts ? unit.back() : 0.0);
  };
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // best[k][i]: the smallest largest-stage time putting the first i layers in k + 1 stages.
  std::vector<std::vector<double>> best(parts, std::vector<double>(layers + 1, kNone));
  std::vector<std::vector<std::size_t>> cut(parts, std::vector<std::size_t>(layers + 1, 0));
  for (std::size_t i = 1; i <= layers; ++i) best[0][i] = cost(0, i, 0);
  for (std::size_t k = 1; k < parts; ++k) {
    for (std::size_t i = k + 1; i <= layers; ++i) {
      for (std::size_t j = k; j < i; ++j) {
        const double worst = std::max(best[k - 1][j], cost(j, i, k));
        if (worst < best[k][i]) {
          best[k][i] = worst;
          cut[k][i] = j;
        }
      }
    }
  }
  std::vector<std::int64_t> split(parts);
  std::size_t end = layers;
  for (std::size_t k = parts; k-- > 0;) {
    const std::size_t start = k == 0 ? 0 : cut[k][end];
    split[k] = static_cast<std::int64_t>(end - start);
    end = start;
  }
  return split;
}

}  // namespace moesim
