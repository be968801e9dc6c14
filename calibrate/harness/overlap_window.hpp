// Timing one kind of work while another runs back to back beside it on every GPU: the interference
// group's two sides (a GEMM beside a collective, a collective beside a GEMM or grouped GEMM) share
// this. Only foreground iterations that start and end inside the background window, as seen on the
// first GPU, count: an iteration that ran partly alone would dilute the slowdown.
#pragma once

#include <functional>
#include <vector>

#include "context.hpp"
#include "timing.hpp"

namespace moesim::cal {

// Which of a slot's two streams a piece of work is issued on.
enum class StreamRole { Main, Side };
cudaStream_t stream_of(const Slot& s, StreamRole role);

struct OverlapRun {
    TimedRun inside;                // foreground iterations wholly inside the window (warmup = lead-ins)
    int launched = 0;               // foreground iterations timed
    double window_us = 0;           // background start to end on the first GPU (0 without background)
    double background_mean_us = 0;  // window / reps: one background iteration beside the foreground
};

struct OverlapPlan {
    StreamRole background_stream = StreamRole::Side;
    int background_reps = 0;           // 0: no background, every foreground iteration counts
    std::function<void()> background;  // one iteration on every slot's background stream
    StreamRole foreground_stream = StreamRole::Main;
    int lead_in = 1;                   // untimed foreground iterations first: the background gets going
    int iters = 1;                     // timed foreground iterations
    std::function<void()> foreground;  // one iteration on every slot's foreground stream
};

// Enqueues the background reps, then the foreground's lead-in and timed iterations, each
// foreground stream waiting for its GPU's background start; synchronises and keeps the
// iterations inside the window.
OverlapRun run_overlapped(Context& ctx, const OverlapPlan& plan);

// Background reps to cover `foreground_iters` iterations of `foreground_us` each, slowed by up to
// `headroom`, with background iterations of `background_us`; at least 2, at most max_reps.
int background_reps_for(double foreground_us, int foreground_iters, double headroom, double background_us,
                        int max_reps);

}  // namespace moesim::cal
