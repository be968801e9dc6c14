// CUDA-event timing of measurement points (see timing.hpp).
#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include "errors.hpp"

namespace moesim::cal {

Stats compute_stats(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) {
        const double pos = p * static_cast<double>(v.size() - 1);
        const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
    };
    s.median = pct(0.5);
    s.p10 = pct(0.1);
    s.p90 = pct(0.9);
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / static_cast<double>(v.size());
    s.min = v.front();
    s.max = v.back();
    return s;
}

double extrapolate_s(double last_s, double last_size, double size) {
    if (last_s <= 0 || last_size <= 0) return 0;
    return last_s * std::max(1.0, size / last_size);
}

std::vector<Slot*> all_slots(Context& ctx) {
    std::vector<Slot*> v;
    for (auto& s : ctx.slots) v.push_back(&s);
    return v;
}

std::vector<Slot*> first_slot(Context& ctx) { return {&ctx.slots.front()}; }

PointTimer::PointTimer(Context& ctx, const Options& opts, Budget& budget)
    : ctx_(ctx), opts_(opts), budget_(budget), pools_(ctx.slots.size()) {}

PointTimer::~PointTimer() {
    if (std::uncaught_exceptions() > 0) return;
    for (std::size_t i = 0; i < pools_.size(); ++i) {
        cudaSetDevice(ctx_.slots[i].device);
        for (auto e : pools_[i].start) cudaEventDestroy(e);
        for (auto e : pools_[i].stop) cudaEventDestroy(e);
    }
}

void PointTimer::ensure_events(std::size_t slot_index, int n) {
    Pool& p = pools_[slot_index];
    CAL_CUDA(cudaSetDevice(ctx_.slots[slot_index].device));
    while (p.start.size() < static_cast<std::size_t>(n)) {
        cudaEvent_t a, b;
        CAL_CUDA(cudaEventCreate(&a));
        CAL_CUDA(cudaEventCreate(&b));
        p.start.push_back(a);
        p.stop.push_back(b);
    }
}

bool PointTimer::affordable(double est_iter_s) const {
    const double need = est_iter_s * (std::max(1, opts_.warmup) + opts_.min_iters + 1);
    return ctx_.bcast_int(budget_.afford(need) ? 1 : 0) != 0;
}

TimedRun PointTimer::run(const std::vector<Slot*>& slots, bool across_procs, const std::function<void()>& enqueue) {
    TimedRun r;
    // Warm-up (at least one iteration, which also gives the per-iteration estimate).
    r.warmup = std::max(1, opts_.warmup);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < r.warmup; ++i) enqueue();
    ctx_.sync();
    const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / r.warmup;

    int n = opts_.iters;
    if (budget_.limited()) {
        const double room = std::max(0.0, budget_.group_left_s()) * 0.5;
        const double fit = warm_s > 0 ? room / warm_s : n;
        n = static_cast<int>(std::clamp(fit, static_cast<double>(opts_.min_iters), static_cast<double>(n)));
    }
    n = ctx_.bcast_int(n);
    r.iters = n;

    std::vector<std::size_t> idx;
    for (Slot* s : slots) {
        const std::size_t i = static_cast<std::size_t>(s - ctx_.slots.data());
        ensure_events(i, n);
        idx.push_back(i);
    }
    for (int it = 0; it < n; ++it) {
        for (std::size_t j = 0; j < slots.size(); ++j) {
            CAL_CUDA(cudaSetDevice(slots[j]->device));
            CAL_CUDA(cudaEventRecord(pools_[idx[j]].start[static_cast<std::size_t>(it)], slots[j]->stream));
        }
        enqueue();
        for (std::size_t j = 0; j < slots.size(); ++j) {
            CAL_CUDA(cudaSetDevice(slots[j]->device));
            CAL_CUDA(cudaEventRecord(pools_[idx[j]].stop[static_cast<std::size_t>(it)], slots[j]->stream));
        }
    }
    ctx_.sync();
    r.times_us.assign(static_cast<std::size_t>(n), 0.0);
    for (int it = 0; it < n; ++it) {
        for (std::size_t j = 0; j < slots.size(); ++j) {
            float ms = 0;
            CAL_CUDA(cudaEventElapsedTime(&ms, pools_[idx[j]].start[static_cast<std::size_t>(it)],
                                          pools_[idx[j]].stop[static_cast<std::size_t>(it)]));
            const double us = std::round(static_cast<double>(ms) * 1e6) / 1e3;  // ns resolution
            r.times_us[static_cast<std::size_t>(it)] = std::max(r.times_us[static_cast<std::size_t>(it)], us);
        }
    }
    if (across_procs) ctx_.max_over_procs(r.times_us);
    r.stats = compute_stats(r.times_us);
    last_iter_s_ = r.stats.median * 1e-6;
    return r;
}

}  // namespace moesim::cal
