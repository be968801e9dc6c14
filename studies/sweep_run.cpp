// Running sweep points on a pool of threads.
#include <atomic>
#include <mutex>
#include <thread>

#include "studies/sweep.hpp"

namespace moesim {

SweepPoint run_point(const ScenarioSource& source, const PointOverrides& point, std::size_t index) {
  SweepPoint pt;
  pt.index = index;
  pt.values = point;
  try {
    Scenario s = compose(source, changes_of(point));
    pt.result = simulate(s).result;
    pt.scenario = std::move(s);
    pt.ok = true;
  } catch (const InputError& e) {
    pt.error = e.what();  // an impossible plan: reported, and the sweep goes on
  }
  return pt;
}

SweepResult run_points(const ScenarioSource& source, const std::vector<PointOverrides>& points, std::size_t first,
                       std::size_t count, int jobs, const SweepProgress& progress) {
  SweepResult out;
  out.points.resize(count);
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mutex;
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      out.points[i] = run_point(source, points[first + i], first + i);
      const std::size_t d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress(d, count);
      }
    }
  };
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(count)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace moesim
