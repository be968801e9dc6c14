"""What the PyTorch kernel benchmarks share: CUDA-event timing and the harness's percentiles
(calibrate/harness/timing.cpp: linear interpolation between order statistics)."""
import argparse
import datetime
import socket
import sys

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


def arguments(doc, iters):
    """-o FILE, --iters, --warmup; the description is the script docstring's first paragraph."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--iters", type=int, default=iters)
    ap.add_argument("--warmup", type=int, default=5)
    return ap.parse_args()


def environment(tool):
    """The measurements file's environment (moesim-measurements/1), or None without a CUDA device."""
    if not torch.cuda.is_available():
        print(f"{tool}: no CUDA device", file=sys.stderr)
        return None
    props = torch.cuda.get_device_properties(0)
    return {"hostname": socket.gethostname(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "torch_version": torch.__version__, "cuda_runtime_version": torch.version.cuda,
            "cudnn_version": torch.backends.cudnn.version(), "gpu_count": 1, "node_count": 1, "process_count": 1,
            "device": {"index": 0, "name": props.name, "sm_count": props.multi_processor_count,
                       "memory_bytes": props.total_memory, "compute_capability": f"{props.major}.{props.minor}"}}
