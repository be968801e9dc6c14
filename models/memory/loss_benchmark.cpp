#include "models/memory/loss_benchmark.hpp"

#include <algorithm>
#include <vector>

#include "models/costs/loss_paths.hpp"

namespace moesim {

double loss_benchmark_peak_bytes(const LossBenchmark& b) {
  constexpr std::size_t kHeadInput = 0, kLogits = 1;  // the buffers every path allocates first
  const LossShape shape{b.activation, b.input_logits ? 0.0 : b.hidden, b.vocab};
  const LossBuffers path = loss_path(b.impl).steps(shape);
  std::vector<double> sizes;
  double live = 0, peak = 0;
  const auto walk = [&](const std::vector<LossBuffers::Step>& steps) {
    for (const auto& step : steps) {
      if (step.frees < 0) {
        sizes.push_back(step.bytes);
        if (sizes.size() - 1 != kHeadInput) live += step.bytes;
        peak = std::max(peak, live);
        continue;
      }
      const auto freed = static_cast<std::size_t>(step.frees);
      if (freed == kHeadInput || (b.input_logits && freed == kLogits)) continue;
      live -= sizes[freed];
    }
  };
  walk(path.forward_steps);
  walk(path.backward_steps);
  const double weight_gradient = b.head_weight_gradient ? b.vocab * b.hidden * b.activation : 0.0;
  return b.tokens * peak + weight_gradient;
}

}  // namespace moesim
