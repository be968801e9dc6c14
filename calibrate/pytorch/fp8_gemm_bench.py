#!/usr/bin/env python3
"""FP8 (E4M3, one scale per tensor) GEMM rates over BF16 on one GPU, through PyTorch: the dense
torch._scaled_mm that torchao's Float8Linear (tensorwise recipe) calls, against torch.mm, and the
routed experts' grouped GEMM, torch._scaled_grouped_mm (row-wise scales) against torch._grouped_mm
(one launch per expert with torch._scaled_mm / torch.mm where the grouped calls are missing).

    python3 calibrate/pytorch/fp8_gemm_bench.py -o fp8.json [--iters 20] [--warmup 5]

Writes a moesim-measurements/1 document: one `gemm_fp8` record per dense shape and one
`grouped_gemm_fp8` record per grouped shape, each holding both times (times_us: FP8,
bf16_times_us: BF16 on the same shape), so `moesim fit` takes their ratio without pooling the BF16
reference into the profile's BF16 tables. Inputs are random, never zero; each shape is checked
once against a float64 product of the same (dequantized) operands: relative L2 error within 2e-2.
"""
import json
import os
import sys

import torch

from bench_common import arguments, environment, pct, time_us

E4M3 = torch.float8_e4m3fn
E4M3_MAX = 448.0
DENSE_NK = [(4096, 4096), (8192, 8192), (14336, 4096), (4096, 14336)]
DENSE_M = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
EXPERTS = 16
GROUPED_NK = [(4096, 4096), (8192, 4096)]
GROUPED_ROWS = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
MAX_REL_ERROR = 2e-2


def quantize(x, dim=None):
    """E4M3 values and the FP32 scale(s) that map them back (amax to 448), per tensor or per row."""
    amax = x.abs().amax() if dim is None else x.abs().amax(dim=dim, keepdim=True)
    scale = (amax.float().clamp(min=1e-12) / E4M3_MAX)
    return (x.float() / scale).to(E4M3), scale


def rel(a, b):
    return float(torch.linalg.vector_norm(a.double() - b) / torch.linalg.vector_norm(b))


def stats(times):
    return {"median_us": pct(times, 0.5), "p10_us": pct(times, 0.1), "p90_us": pct(times, 0.9),
            "mean_us": sum(times) / len(times), "min_us": min(times), "max_us": max(times)}


def dense(m, n, k, iters, warmup, g):
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)  # a linear's [out, in]
    xq, sx = quantize(x)
    wq, sw = quantize(w)
    fp8 = lambda: torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)
    bf16 = lambda: torch.mm(x, w.t())
    ref = (xq.double() * sx.double()) @ (wq.double() * sw.double()).t()
    err = rel(fp8(), ref)
    bf16_err = rel(bf16(), x.double() @ w.double().t())
    return time_us(fp8, iters, warmup), time_us(bf16, iters, warmup), max(err, bf16_err)


def grouped(rows, n, k, iters, warmup, g):
    """Each of EXPERTS experts multiplies `rows` rows [rows, k] by its own [k, n] weight."""
    total = rows * EXPERTS
    x = torch.randn(total, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(EXPERTS, n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    offs = torch.arange(rows, total + 1, rows, device="cuda", dtype=torch.int32)
    xq, sx = quantize(x, dim=1)           # per row: [total, 1]
    wq, sw = quantize(w, dim=2)           # per expert and output column: [E, n, 1]
    method = "torch._scaled_grouped_mm / torch._grouped_mm"
    try:
        fp8 = lambda: torch._scaled_grouped_mm(xq, wq.transpose(-2, -1), sx.squeeze(1), sw.squeeze(2), offs=offs,
                                               out_dtype=torch.bfloat16)
        bf16 = lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
        out = fp8()
        bf16()
    except Exception as e:  # noqa: BLE001  no grouped kernels here: one launch per expert
        print(f"grouped calls unavailable ({str(e).splitlines()[0]}): one launch per expert", file=sys.stderr)
        method = "per expert: torch._scaled_mm / torch.mm"
        xs, ws = list(x.split(rows)), list(w.unbind(0))
        q = [quantize(t) for t in xs]
        qw = [quantize(t) for t in ws]
        def fp8():
            return torch.cat([torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
                              for (a, sa), (b, sb) in zip(q, qw)])
        bf16 = lambda: torch.cat([a @ b.t() for a, b in zip(xs, ws)])
        out = fp8()
        xq = torch.cat([a for a, _ in q]); sx = torch.cat([s.expand(rows, 1) for _, s in q])
        wq = torch.stack([b for b, _ in qw]); sw = torch.stack([s.expand(n, 1) for _, s in qw])
    deq_x = xq.double() * sx.double()
    deq_w = wq.double() * sw.double()
    ref = torch.cat([deq_x[e * rows:(e + 1) * rows] @ deq_w[e].t() for e in range(EXPERTS)])
    bref = torch.cat([x[e * rows:(e + 1) * rows].double() @ w[e].double().t() for e in range(EXPERTS)])
    err = max(rel(out, ref), rel(bf16(), bref))
    return time_us(fp8, iters, warmup), time_us(bf16, iters, warmup), err, method


def main():
    a = arguments(__doc__, 20)
    env = environment("fp8_gemm_bench")
    if env is None:
        return 3
    g = torch.Generator(device="cuda").manual_seed(20240611)
    out = []
    for n, k in DENSE_NK:
        for m in DENSE_M:
            t8, t16, err = dense(m, n, k, a.iters, a.warmup, g)
            r = {"kind": "gemm_fp8", "group": "fp8", "label": "tensorwise", "dtype": "fp8_e4m3", "group_size": 1,
                 "iters": a.iters, "warmup": a.warmup, "times_us": t8, "bf16_times_us": t16,
                 "check": "ok" if err <= MAX_REL_ERROR else "failed", "check_rel_error": err,
                 "m": m, "n": n, "k": k, "layout": "fwd", "scaling": "tensorwise", "library": "torch._scaled_mm",
                 "flops": 2.0 * m * n * k}
            r.update(stats(t8))
            r["ratio"] = pct(t16, 0.5) / r["median_us"]
            out.append(r)
            print(f"dense   m={m:6d} n={n:6d} k={k:6d}  fp8 {r['median_us']:9.1f} us  bf16 {pct(t16, .5):9.1f} us"
                  f"  x{r['ratio']:.2f}  err {err:.1e}", flush=True)
    for n, k in GROUPED_NK:
        for rows in GROUPED_ROWS:
            t8, t16, err, method = grouped(rows, n, k, a.iters, a.warmup, g)
            r = {"kind": "grouped_gemm_fp8", "group": "fp8", "label": "rowwise", "dtype": "fp8_e4m3",
                 "group_size": 1, "iters": a.iters, "warmup": a.warmup, "times_us": t8, "bf16_times_us": t16,
                 "check": "ok" if err <= MAX_REL_ERROR else "failed", "check_rel_error": err,
                 "m": "rows", "n": n, "k": k, "layout": "fwd", "scaling": "rowwise", "method": method,
                 "experts": EXPERTS, "rows_per_expert": [rows] * EXPERTS, "flops": 2.0 * rows * EXPERTS * n * k}
            r.update(stats(t8))
            r["ratio"] = pct(t16, 0.5) / r["median_us"]
            out.append(r)
            print(f"grouped rows/expert={rows:5d} n={n:5d} k={k:5d}  fp8 {r['median_us']:9.1f} us  bf16 "
                  f"{pct(t16, .5):9.1f} us  x{r['ratio']:.2f}  err {err:.1e}  ({method})", flush=True)
    doc = {"schema": "moesim-measurements/1",
           "tool": {"name": "fp8_gemm_bench.py", "build": "python", "with_mpi": False,
                    "command_line": " ".join(sys.argv)},
           "status": "complete", "error": None, "environment": env, "measurements": out}
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
