#!/usr/bin/env python3
"""GEMM throughput of our CUDA kernel (compiler.topi.gpu.matmul) against cuBLAS (via torch).

    python bench/gpu_matmul.py [--size 4096] [--repeat 10]

Runs C = A @ B at size^3 in fp32 and fp16-in/fp32-accumulate, tries a few tile
configurations of our kernel (the best one is reported), checks 64 rows of C
against numpy, and times torch.matmul (cuBLAS; TF32 off for fp32, fp16 with
tensor cores for fp16) in the same process. Without torch the comparison is the
naive one-thread-per-element kernel (`matmul_naive`), and the JSON says so.
The last line printed is one JSON object; rates are TFLOP/s (2*M*N*K / time).
Without a GPU it prints a JSON line with "gpu": false and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from compiler.codegen.gpu import cuda  # noqa: E402
from compiler.topi import gpu  # noqa: E402

CONFIGS = [  # (name, keyword arguments of gpu.matmul)
    ("128x128x8_t8x8_prefetch", dict(block_m=128, block_n=128, block_k=8, prefetch=True)),
    ("128x128x8_t8x8", dict(block_m=128, block_n=128, block_k=8, prefetch=False)),
    ("128x128x16_t8x8_prefetch", dict(block_m=128, block_n=128, block_k=16, prefetch=True)),
    ("128x64x8_t8x8_prefetch", dict(block_m=128, block_n=64, block_k=8, prefetch=True)),
]


def check(c: np.ndarray, a: np.ndarray, b: np.ndarray, rows: int = 64) -> float:
    """Max error of the first `rows` rows of C relative to the largest reference value."""
    ref = a[:rows].astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(c[:rows] - ref).max() / np.abs(ref).max())


def bench_ours(n: int, dtype: str, repeat: int, a: np.ndarray, b: np.ndarray):
    da, db = cuda.DeviceArray.from_numpy(a), cuda.DeviceArray.from_numpy(b)
    dc = cuda.DeviceArray.empty((n, n), np.float32)
    results = []
    for cname, kw in CONFIGS:
        try:
            t0 = time.time()
            kern = cuda.build(gpu.matmul(n, n, n, dtype, **kw))
            compile_s = time.time() - t0
        except (ValueError, RuntimeError) as e:
            print(f"  {dtype} {cname}: skipped ({str(e).splitlines()[0]})")
            continue
        ms = cuda.time_ms(lambda: kern.launch(da, db, dc), repeat=repeat)
        err = check(dc.numpy(), a.astype(np.float32), b.astype(np.float32))
        tf = gpu.flops(n, n, n) / ms / 1e9
        print(f"  ours {dtype} {cname}: {ms:.3f} ms  {tf:.2f} TFLOP/s  rel err {err:.2e}  "
              f"(compile {compile_s:.1f} s)")
        results.append((tf, cname, err))
    for d in (da, db, dc):
        d.free()
    ok = [r for r in results if r[2] < (1e-4 if dtype == "float32" else 1e-3)]
    if not ok:
        raise RuntimeError(f"no {dtype} configuration of our kernel was correct: {results}")
    return max(ok)


def bench_torch(n: int, a: np.ndarray, b: np.ndarray, repeat: int, torch) -> float:
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    out = torch.empty((n, n), dtype=ta.dtype, device="cuda")
    for _ in range(2):
        torch.matmul(ta, tb, out=out)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(repeat):
        torch.matmul(ta, tb, out=out)
    e.record()
    torch.cuda.synchronize()
    return gpu.flops(n, n, n) / (s.elapsed_time(e) / repeat) / 1e9


def bench_naive(n: int, a: np.ndarray, b: np.ndarray, repeat: int) -> float:
    kern = cuda.build(gpu.matmul_naive(n, n, n))
    da, db = cuda.DeviceArray.from_numpy(a), cuda.DeviceArray.from_numpy(b)
    dc = cuda.DeviceArray.empty((n, n), np.float32)
    ms = cuda.time_ms(lambda: kern.launch(da, db, dc), repeat=max(1, repeat // 5), warmup=1)
    for d in (da, db, dc):
        d.free()
    return gpu.flops(n, n, n) / ms / 1e9


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)
    n = args.size
    if not cuda.gpu_available():
        print("no CUDA GPU on this machine: nothing to measure")
        print(json.dumps({"gpu": False, "size": n}))
        return 0
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        torch, have_torch = None, False
    name = cuda.device_name()
    print(f"device: {name}; GEMM {n}x{n}x{n}; reference: "
          f"{'torch ' + torch.__version__ + ' cuBLAS' if have_torch else 'naive kernel (torch absent)'}")
    rng = np.random.default_rng(0)
    a32 = rng.standard_normal((n, n), dtype=np.float32)
    b32 = rng.standard_normal((n, n), dtype=np.float32)
    a16, b16 = a32.astype(np.float16), b32.astype(np.float16)
    out = {"device": name, "size": n, "reference": "torch_cublas" if have_torch else "naive_kernel"}
    for tag, dtype, a, b in (("fp32", "float32", a32, b32), ("fp16_fp32acc", "float16", a16, b16)):
        tf, cname, err = bench_ours(n, dtype, args.repeat, a, b)
        if have_torch:
            ref = bench_torch(n, a, b, args.repeat, torch)
        elif dtype == "float32":
            ref = bench_naive(n, a, b, args.repeat)
        else:
            ref = None
        print(f"{tag}: ours {tf:.2f} TFLOP/s ({cname}), reference {ref if ref is None else round(ref, 2)} TFLOP/s")
        out[f"ours_{tag}_tflop_per_s"] = round(tf, 3)
        out[f"ours_{tag}_config"] = cname
        out[f"ours_{tag}_max_rel_err"] = float(f"{err:.3g}")
        out[f"ref_{tag}_tflop_per_s"] = None if ref is None else round(ref, 3)
        out[f"ratio_{tag}_ours_over_ref"] = None if ref is None else round(tf / ref, 3)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
