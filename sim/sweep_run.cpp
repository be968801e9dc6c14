// Running sweep points on a pool of threads.
#include <atomic>
#include <mutex>
#include <thread>

#include "sim/sweep.hpp"

namespace moesim {

SweepResult run_points(const std::string& file, const std::vector<std::string>& sets, const std::vector<PointOverrides>& points,
                       std::size_t first, std::size_t count, int jobs, const SweepProgress& progress) {
  SweepResult out;
  out.points.resize(count);
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mutex;
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      SweepPoint& pt = out.points[i];
      pt.index = first + i;
      pt.values = points[first + i];
      std::vector<std::string> point_sets = sets;
      for (const auto& [path, value] : pt.values) point_sets.push_back(override_text(path, value));
      try {
        Scenario s = load_scenario(file, point_sets);
        pt.result = simulate(s, SimOptions{}).result;
        pt.scenario = std::move(s);
        pt.ok = true;
      } catch (const InputError& e) {
        pt.error = e.what();  // an impossible plan: reported, and the sweep goes on
      }
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
