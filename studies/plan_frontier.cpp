#include "studies/plan_frontier.hpp"

#include <algorithm>

namespace moesim {

std::vector<std::size_t> memory_frontier(const std::vector<PlanRecord>& records) {
  std::vector<std::size_t> fitting;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (records[i].status == PlanStatus::replayed && records[i].fits) fitting.push_back(i);
  std::sort(fitting.begin(), fitting.end(), [&](std::size_t a, std::size_t b) {
    const PlanRecord &x = records[a], &y = records[b];
    if (x.peak_reserved_GiB != y.peak_reserved_GiB) return x.peak_reserved_GiB < y.peak_reserved_GiB;
    if (x.tokens_per_s_per_gpu != y.tokens_per_s_per_gpu) return x.tokens_per_s_per_gpu > y.tokens_per_s_per_gpu;
    return x.candidate < y.candidate;
  });
  std::vector<std::size_t> out;
  double best = -1;
  for (const std::size_t i : fitting) {
    if (records[i].tokens_per_s_per_gpu <= best) continue;
    best = records[i].tokens_per_s_per_gpu;
    out.push_back(i);
  }
  return out;
}

}  // namespace moesim
