// Running sweep points on a pool of threads, handed on in point order as they finish.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "studies/sweep.hpp"

namespace moesim {

namespace {

// Points finished ahead of the next one to hand on, per thread: enough that a slow point does
// not idle the other threads, few enough that memory stays bounded by the threads, not the sweep.
constexpr std::size_t kAheadPerThread = 4;

}  // namespace

SweepPoint run_point(const ScenarioSource& source, PointOverrides point, std::size_t index, ResolvedRecord record) {
  return run_twin_point(source, std::move(point), index, SweepPoint{}, record);
}

SweepPoint run_twin_point(const ScenarioSource& source, PointOverrides point, std::size_t index, const SweepPoint& twin,
                          ResolvedRecord record) {
  return run_composed_point([&](const PointOverrides& values) { return compose(source, changes_of(values), record); },
                            std::move(point), index, twin);
}

SweepPoint run_composed_point(const std::function<Scenario(const PointOverrides&)>& composed, PointOverrides values,
                              std::size_t index, const SweepPoint& twin) {
  SweepPoint pt;
  pt.index = index;
  pt.values = std::move(values);
  try {
    Scenario s = composed(pt.values);
    if (twin.ok && same_step(*twin.scenario, s)) {
      pt.result = restate_memory(s, *twin.result);
    } else {
      thread_local Simulation sim;  // its buffers serve the thread's next point
      simulate(s, SimOptions{}, sim);
      pt.result = std::move(sim.result);
    }
    pt.scenario = std::move(s);
    pt.ok = true;
  } catch (const InputError& e) {
    pt.error = e.what();  // an impossible plan: reported, and the sweep goes on
  }
  return pt;
}

void run_points_in_order(const ScenarioSource& source, const PointList& points, std::size_t first, std::size_t count,
                         int jobs, const SweepProgress& progress, const SweepSink& sink, ResolvedRecord record) {
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(std::max<std::size_t>(count, 1))));
  const std::size_t window = kAheadPerThread * static_cast<std::size_t>(threads);
  std::vector<std::optional<SweepPoint>> ring(window);  // point i waits in slot i % window
  std::mutex mutex;
  std::condition_variable room;
  std::size_t next = 0, emitted = 0, done = 0;
  bool emitting = false;  // a thread is handing points on (one at a time keeps them in order)
  std::exception_ptr failure;
  auto worker = [&] {
    while (true) {
      std::size_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mutex);
        room.wait(lock, [&] { return failure || next >= count || next < emitted + window; });
        if (failure || next >= count) return;
        i = next++;
      }
      SweepPoint pt = run_point(source, points[first + i], first + i, record);
      std::unique_lock<std::mutex> lock(mutex);
      ring[i % window] = std::move(pt);
      ++done;
      if (progress) progress(done, count);
      if (emitting) continue;  // the thread handing points on takes this one too
      // Whoever finds the next point in order finished hands on every consecutive finished one,
      // outside the lock: the sink's work (reports) overlaps the other threads' simulations.
      emitting = true;
      while (!failure && emitted < count && ring[emitted % window]) {
        std::optional<SweepPoint> ready = std::move(ring[emitted % window]);
        ring[emitted % window].reset();
        ++emitted;
        room.notify_all();
        lock.unlock();
        try {
          sink(std::move(*ready));
          ready.reset();  // dropped outside the lock too
        } catch (...) {
          ready.reset();
          lock.lock();
          failure = std::current_exception();  // a write failed: stop handing out points
          break;
        }
        lock.lock();
      }
      emitting = false;
      room.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

SweepResult run_points(const ScenarioSource& source, const PointList& points, std::size_t first, std::size_t count,
                       int jobs, const SweepProgress& progress) {
  SweepResult out;
  out.points.reserve(count);
  run_points_in_order(source, points, first, count, jobs, progress,
                      [&](SweepPoint&& p) { out.points.push_back(std::move(p)); });
  return out;
}

}  // namespace moesim
