#include "sim/bound_chunks.hpp"

#include <cstddef>
#include <utility>

namespace moesim {

std::vector<std::vector<double>> gradient_arrivals(const std::vector<std::vector<ChunkTimes>>& fastest,
                                                   const std::vector<LayerPlace>& places, double hop, bool split) {
  std::vector<std::pair<std::size_t, std::size_t>> order;  // (stage, chunk) in model order
  for (const LayerPlace& p : places) {
    const std::pair<std::size_t, std::size_t> at{static_cast<std::size_t>(p.stage), static_cast<std::size_t>(p.chunk)};
    if (order.empty() || order.back() != at) order.push_back(at);
  }
  const auto times = [&](std::size_t i) -> const ChunkTimes& { return fastest[order[i].first][order[i].second]; };
  const auto hop_after = [&](std::size_t i) { return order[i].first != order[i + 1].first ? hop : 0.0; };
  double t = 0;
  for (std::size_t i = 0; i < order.size(); ++i) t += times(i).fwd + (i + 1 < order.size() ? hop_after(i) : 0.0);
  std::vector<std::vector<double>> out(fastest.size());
  for (std::size_t s = 0; s < fastest.size(); ++s) out[s].assign(fastest[s].size(), 0.0);
  for (std::size_t i = order.size(); i-- > 0;) {
    out[order[i].first][order[i].second] = t;
    t += (split ? times(i).input : times(i).bwd) + (i > 0 ? hop_after(i - 1) : 0.0);
  }
  return out;
}

}  // namespace moesim
