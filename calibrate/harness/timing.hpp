// Timing of one measurement point with CUDA events: warm-up, a budget-aware choice of the
// iteration count, then per-iteration start/stop events on every participating GPU's main
// stream. An iteration's time is the slowest GPU's (and, under MPI, the slowest rank's).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <vector>

#include "budget.hpp"
#include "cli.hpp"
#include "context.hpp"

namespace moesim::cal {

struct Stats {
    double median = 0, p10 = 0, p90 = 0, mean = 0, min = 0, max = 0;
};

// Percentiles by linear interpolation between order statistics (numpy's default).
Stats compute_stats(std::vector<double> v);

struct TimedRun {
    std::vector<double> times_us;
    int iters = 0;
    int warmup = 0;
    Stats stats;
};

class PointTimer {
  public:
    PointTimer(Context& ctx, const Options& opts, Budget& budget);
    ~PointTimer();
    PointTimer(const PointTimer&) = delete;
    PointTimer& operator=(const PointTimer&) = delete;

    // True when warm-up plus the fewest timed iterations at est_iter_s fit the group's share
    // (same answer on every rank). est_iter_s = 0 means unknown: always affordable.
    bool affordable(double est_iter_s) const;

    // Measures `enqueue` (which issues one iteration's work on the slots' streams) on the given
    // local slots. across_procs: take the max over MPI ranks too (collectives).
    TimedRun run(const std::vector<Slot*>& slots, bool across_procs, const std::function<void()>& enqueue);

    // Seconds per iteration of the last run (for extrapolating the next point).
    double last_iter_s() const { return last_iter_s_; }

  private:
    struct Pool {
        std::vector<cudaEvent_t> start, stop;
    };
    void ensure_events(std::size_t slot_index, int n);
    Context& ctx_;
    const Options& opts_;
    Budget& budget_;
    std::vector<Pool> pools_;
    double last_iter_s_ = 0;
};

// Extrapolates the time of a bigger point from the last one, assuming time grows at most
// linearly with bytes (and never shrinks).
double extrapolate_s(double last_s, double last_size, double size);

// All local slots (for collectives) or only the first (for single-GPU compute measurements).
std::vector<Slot*> all_slots(Context& ctx);
std::vector<Slot*> first_slot(Context& ctx);

}  // namespace moesim::cal
