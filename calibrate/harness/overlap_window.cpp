// Foreground timing inside a background window (see overlap_window.hpp).
#include "overlap_window.hpp"

#include <algorithm>
#include <cmath>

#include "errors.hpp"

namespace moesim::cal {
namespace {

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    CAL_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

}  // namespace

cudaStream_t stream_of(const Slot& s, StreamRole role) { return role == StreamRole::Main ? s.stream : s.side; }

OverlapRun run_overlapped(Context& ctx, const OverlapPlan& plan) {
    const bool with_background = plan.background_reps > 0 && plan.background;
    // One start event per GPU (its foreground waits for it); on the first GPU also the window's end
    // and a start and stop event per timed iteration.
    std::vector<cudaEvent_t> starts(ctx.slots.size());
    for (std::size_t i = 0; i < ctx.slots.size(); ++i) {
        CAL_CUDA(cudaSetDevice(ctx.slots[i].device));
        CAL_CUDA(cudaEventCreate(&starts[i]));
    }
    Slot& s0 = ctx.first();
    CAL_CUDA(cudaSetDevice(s0.device));
    std::vector<cudaEvent_t> ev(static_cast<std::size_t>(1 + 2 * plan.iters));
    for (auto& e : ev) CAL_CUDA(cudaEventCreate(&e));
    const cudaEvent_t window_end = ev[0];
    for (std::size_t i = 0; i < ctx.slots.size(); ++i) {
        const Slot& s = ctx.slots[i];
        CAL_CUDA(cudaSetDevice(s.device));
        CAL_CUDA(cudaEventRecord(starts[i], stream_of(s, plan.background_stream)));
        CAL_CUDA(cudaStreamWaitEvent(stream_of(s, plan.foreground_stream), starts[i], 0));
    }
    if (with_background) {
        for (int r = 0; r < plan.background_reps; ++r) plan.background();
        CAL_CUDA(cudaSetDevice(s0.device));
        CAL_CUDA(cudaEventRecord(window_end, stream_of(s0, plan.background_stream)));
    }
    for (int i = 0; i < plan.lead_in; ++i) plan.foreground();
    const cudaStream_t fg0 = stream_of(s0, plan.foreground_stream);
    for (int it = 0; it < plan.iters; ++it) {
        CAL_CUDA(cudaSetDevice(s0.device));
        CAL_CUDA(cudaEventRecord(ev[static_cast<std::size_t>(1 + 2 * it)], fg0));
        plan.foreground();
        CAL_CUDA(cudaSetDevice(s0.device));
        CAL_CUDA(cudaEventRecord(ev[static_cast<std::size_t>(2 + 2 * it)], fg0));
    }
    ctx.sync();
    OverlapRun out;
    out.launched = plan.iters;
    out.inside.warmup = plan.lead_in;
    const double end_ms = with_background ? elapsed_ms(starts[0], window_end) : 0.0;
    for (int it = 0; it < plan.iters; ++it) {
        const double a = elapsed_ms(starts[0], ev[static_cast<std::size_t>(1 + 2 * it)]);
        const double b = elapsed_ms(starts[0], ev[static_cast<std::size_t>(2 + 2 * it)]);
        // The window opens at the start event itself: the background is the first work after it.
        if (!with_background || b <= end_ms) out.inside.times_us.push_back(std::round((b - a) * 1e6) / 1e3);
    }
    for (auto e : ev) cudaEventDestroy(e);
    for (auto e : starts) cudaEventDestroy(e);
    out.inside.iters = static_cast<int>(out.inside.times_us.size());
    out.inside.stats = compute_stats(out.inside.times_us);
    out.window_us = end_ms * 1e3;
    out.background_mean_us = with_background ? out.window_us / plan.background_reps : 0.0;
    return out;
}

int background_reps_for(double foreground_us, int foreground_iters, double headroom, double background_us,
                        int max_reps) {
    const double window_us = foreground_us * foreground_iters * headroom;
    const double reps = std::ceil(window_us / std::max(1.0, background_us)) + 2.0;  // +2: the lead-in's share
    return static_cast<int>(std::clamp(reps, 2.0, static_cast<double>(max_reps)));
}

}  // namespace moesim::cal
