#!/usr/bin/env python3
"""Flash-attention rates of one GPU, forward and backward, through PyTorch's
scaled_dot_product_attention: the attention kernels torchtitan and Olmo-core call (its flash and
cuDNN backends; Megatron's Transformer Engine calls the same cuDNN fused attention). cuBLAS has no
stand-in for them, so the CUDA harness (calibrate/harness/) does not measure attention.

    python3 calibrate/pytorch/attention_bench.py -o attention.json [--iters 30] [--warmup 5]

Writes a moesim-measurements/1 document with one `attention` record per (backend, shape, pass);
`moesim fit` reads it with the harness's files. Inputs are random (never zero), BF16, causal, GQA;
each backend is first checked against a float64 reference on a small shape (output and the three
input gradients, relative L2 error), and a backend that fails the check or cannot run a shape is
recorded as such, never timed. Times are CUDA events around each call (median over iterations);
the backward is timed alone, by repeating autograd over one retained forward graph.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from bench_common import arguments, environment, pct, time_us

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
# (sequences, seq_len, heads, kv_heads, head_dim): 16,384-token microbatches of a Llama-3-8B-like
# block (32 query heads, 8 KV heads of 128) at four lengths, and a 70B-like block (64 / 8) at 8k.
SHAPES = [(8, 2048, 32, 8, 128), (4, 4096, 32, 8, 128), (2, 8192, 32, 8, 128), (1, 16384, 32, 8, 128),
          (2, 8192, 64, 8, 128)]
CHECK_SHAPE = (2, 512, 8, 2, 128)
MAX_REL_ERROR = 2e-2  # BF16 operands: errors land between 1e-3 and 1e-2


def flops(seq, sequences, heads, head_dim, backward):
    # 4 S^2 d per head for QK^T and PV, halved by the causal mask; backward 2.5x (FlashAttention-2),
    # the count models/costs/attention_memory_costs.cpp prices.
    f = 4.0 * seq * seq * 0.5 * heads * head_dim * sequences
    return 2.5 * f if backward else f


def inputs(shape, seed, requires_grad):
    sequences, seq, heads, kv_heads, head_dim = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    def t(h):
        x = torch.randn(sequences, h, seq, head_dim, device="cuda", dtype=torch.bfloat16, generator=g)
        return x.requires_grad_(requires_grad)
    return t(heads), t(kv_heads), t(kv_heads)


def attend(q, k, v, gqa):
    if gqa == "native":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    r = q.shape[1] // k.shape[1]  # "expanded": K and V repeated per query head, as before enable_gqa
    return F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), is_causal=True)


def rel(a, b):
    return float(torch.linalg.vector_norm(a.double() - b) / torch.linalg.vector_norm(b))


def check(backend, gqa):
    """Worst relative L2 error of the output and the three gradients against float64."""
    q, k, v = inputs(CHECK_SHAPE, 7, True)
    dout = torch.randn(q.shape, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel([BACKENDS[backend]]):
        out = attend(q, k, v, gqa)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    qd, kd, vd = (x.detach().double().requires_grad_(True) for x in (q, k, v))
    with sdpa_kernel([SDPBackend.MATH]):
        ref = attend(qd, kd, vd, "expanded")
    ref_grads = torch.autograd.grad(ref, (qd, kd, vd), dout.double())
    errors = [rel(out, ref)] + [rel(g, r) for g, r in zip(grads, ref_grads)]
    if any(e != e for e in errors):  # NaN never passes
        return float("nan")
    return max(errors)


def record(backend, gqa, shape, direction, times, iters, warmup, err, status):
    sequences, seq, heads, kv_heads, head_dim = shape
    f = flops(seq, sequences, heads, head_dim, direction == "backward")
    r = {"kind": "attention", "group": "attention", "label": backend, "dtype": "bf16", "group_size": 1,
         "iters": iters, "warmup": warmup, "times_us": times, "check": status, "check_rel_error": err,
         "pass": direction, "backend": backend, "gqa": gqa, "sequences": sequences, "seq_len": seq,
         "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "causal": True, "flops": f}
    if times:
        med = pct(times, 0.5)
        r.update({"median_us": med, "p10_us": pct(times, 0.1), "p90_us": pct(times, 0.9),
                  "mean_us": sum(times) / len(times), "min_us": min(times), "max_us": max(times),
                  "tflops": f / (med * 1e6)})
    return r


def main():
    a = arguments(__doc__, 30)
    env = environment("attention_bench")
    if env is None:
        return 3
    measurements, notes = [], []
    for backend in BACKENDS:
        gqa, err = None, None
        for mode in ("native", "expanded"):
            try:
                err = check(backend, mode)
                gqa = mode
                break
            except Exception as e:  # noqa: BLE001  this backend cannot run GQA natively (or at all)
                notes.append(f"{backend} ({mode} GQA): {str(e).splitlines()[0]}")
        if gqa is None:
            continue
        ok = err == err and err <= MAX_REL_ERROR
        print(f"{backend}: GQA {gqa}, check rel error {err:.2e} -> {'ok' if ok else 'FAILED'}", flush=True)
        for shape in SHAPES:
            if not ok:
                for d in ("forward", "backward"):
                    measurements.append(record(backend, gqa, shape, d, [], 0, 0, err, "failed"))
                continue
            try:
                q, k, v = inputs(shape, 11, True)
                dout = torch.randn(q.shape, device="cuda", dtype=torch.bfloat16)
                with sdpa_kernel([BACKENDS[backend]]):
                    fwd = time_us(lambda: attend(q, k, v, gqa), a.iters, a.warmup)
                    out = attend(q, k, v, gqa)
                bwd = time_us(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), a.iters, a.warmup)
            except Exception as e:  # noqa: BLE001  a shape this backend cannot run
                notes.append(f"{backend} {shape}: {str(e).splitlines()[0]}")
                continue
            for d, times in (("forward", fwd), ("backward", bwd)):
                r = record(backend, gqa, shape, d, times, a.iters, a.warmup, err, "ok")
                measurements.append(r)
                print(f"{backend:9s} {str(shape):26s} {d:8s} {r['median_us']:10.1f} us {r['tflops']:7.1f} TFLOP/s",
                      flush=True)
            del q, k, v, dout, out
            torch.cuda.empty_cache()
    doc = {"schema": "moesim-measurements/1",
           "tool": {"name": "attention_bench.py", "build": "python", "with_mpi": False,
                    "command_line": " ".join(sys.argv), "notes": notes},
           "status": "complete", "error": None, "environment": env,
           "shapes": {"attention": [list(s) for s in SHAPES], "check": list(CHECK_SHAPE)},
           "measurements": measurements}
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.output)
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
