"""What the PyTorch kernel benchmarks share: CUDA-event timing and the harness's percentiles
(calibrate/harness/timing.cpp: linear interpolation between order statistics)."""
import torch


def pct(values, p):
    v = sorted(values)
    pos = p * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def time_us(fn, iters, warmup):
    """Per-iteration microseconds of fn(), CUDA events around each call, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return times
