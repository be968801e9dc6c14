#!/usr/bin/env python3
"""A dense BF16 GEMM run back to back for a while, to compare the rate a short burst measures
(the harness's points: warm-up and 50 iterations) with the rate the GPU holds under continuous
load at its power limit, as a training step's GEMMs see it. Each window's rate comes with the SM
clock, power draw and temperature NVML reports at its end.

    python3 calibrate/pytorch/sustained_gemm.py -o sustained.json [--seconds 60] [--window 1]
"""
import argparse
import json
import os
import sys
import time

import torch

from bench_common import environment, pct

SHAPE = (8192, 8192, 8192)  # M, N, K: compute-bound, the dense table's plateau
SETS = 4                     # operand sets rotated (4 x 3 x 128 MiB: past the 60 MB L2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--window", type=float, default=1.0)
    a = ap.parse_args()
    env = environment("sustained_gemm")
    if env is None:
        return 3
    try:
        import pynvml
        pynvml.nvmlInit()
        nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as e:  # noqa: BLE001  no NVML: rates only
        print(f"sustained_gemm: no NVML readings ({e})", file=sys.stderr)
        nvml = None
    m, n, k = SHAPE
    g = torch.Generator(device="cuda").manual_seed(5)
    ops = [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g),
            torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g),
            torch.empty(m, n, device="cuda", dtype=torch.bfloat16)) for _ in range(SETS)]
    ref = ops[0][0].double() @ ops[0][1].double().t()
    torch.mm(ops[0][0], ops[0][1].t(), out=ops[0][2])
    err = float(torch.linalg.vector_norm(ops[0][2].double() - ref) / torch.linalg.vector_norm(ref))
    del ref
    flops = 2.0 * m * n * k
    windows, i, start = [], 0, time.monotonic()
    while time.monotonic() - start < a.seconds:
        t0 = torch.cuda.Event(enable_timing=True)
        t1 = torch.cuda.Event(enable_timing=True)
        t0.record()
        count, w0 = 0, time.monotonic()
        while time.monotonic() - w0 < a.window:
            x, w, out = ops[i % SETS]
            torch.mm(x, w.t(), out=out)
            i += 1
            count += 1
            if count % 16 == 0:
                torch.cuda.synchronize()  # keep the host within a few kernels of the GPU
        t1.record()
        t1.synchronize()
        rec = {"t_s": round(time.monotonic() - start, 3), "gemms": count,
               "tflops": flops * count / (t0.elapsed_time(t1) * 1e9)}
        if nvml is not None:
            rec.update({"sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM),
                        "power_w": pynvml.nvmlDeviceGetPowerUsage(nvml) / 1000.0,
                        "temperature_c": pynvml.nvmlDeviceGetTemperature(nvml, pynvml.NVML_TEMPERATURE_GPU)})
        windows.append(rec)
        print(json.dumps(rec), flush=True)
    rates = [w["tflops"] for w in windows]
    first, last = rates[: max(1, len(rates) // 10)], rates[-max(1, len(rates) // 4):]
    summary = {"shape": list(SHAPE), "check_rel_error": err, "windows": len(rates),
               "first_tenth_median_tflops": pct(first, 0.5), "last_quarter_median_tflops": pct(last, 0.5),
               "sustained_over_first": pct(last, 0.5) / pct(first, 0.5)}
    doc = {"schema": "moesim-sustained-gemm/1", "tool": {"name": "sustained_gemm.py", "command_line": " ".join(sys.argv)},
           "environment": env, "summary": summary, "windows": windows}
    with open(a.output + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(a.output + ".tmp", a.output)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
