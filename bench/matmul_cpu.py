"""float32 matmul on the CPU: our best te schedule against numpy (OpenBLAS), same run.

Sizes (M x N x K): 1024^3, 512^3 and 2048 x 2048 x 256. For each size the
candidate register tiles of ``compiler.topi.cpu_matmul`` are built, checked
against numpy and timed; the fastest counts. Time per call is the best of
``--repeat`` calls after one warm-up, over ``--rounds`` alternating rounds of
ours and ``numpy.matmul`` into a preallocated output (the machine may be
shared; the best time is the least disturbed one). GFLOP/s = 2*M*N*K / seconds / 1e9.
Kernels are built with ``fp_contract=True`` (FMA; OpenBLAS uses FMA too).
compile_s is the time from schedule to callable (lowering, LLVM IR, O3,
JIT) of the chosen tile at 1024^3.

Run as ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/matmul_cpu.py``:
those variables pin OpenBLAS to a slower kernel on some machines, which would
flatter the ratio. The last line of output is one JSON object of the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import compiler.build  # noqa: E402
from compiler.codegen import host_target  # noqa: E402
from compiler.runtime_native import num_threads  # noqa: E402
from compiler.topi import candidate_configs, matmul_packed, schedule_matmul_cpu  # noqa: E402

SIZES = [("1024", 1024, 1024, 1024), ("512", 512, 512, 512), ("2048x2048x256", 2048, 2048, 256)]


def best_time(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls of ``fn`` (seconds), after a pause and a warm-up.

    The pause lets the other library's worker threads (libgomp's or OpenBLAS's,
    which spin for a while after each parallel region) go idle, so they do not
    steal the 2 cores from the calls being timed.
    """
    time.sleep(0.2)
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def build(M, N, K, cfg):
    A, B, C = matmul_packed(M, N, K, cfg.nb)
    start = time.perf_counter()
    f = compiler.build(schedule_matmul_cpu(C, cfg), [A, B, C], name="matmul", fp_contract=True)
    return f, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per measurement")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating numpy / ours measurements after tile selection")
    opts = ap.parse_args()
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var}={os.environ[var]} is set; numpy's figure may be off "
                  "(unset it for this command)")
    target = host_target()
    print(f"target: {target.triple} cpu={target.cpu} vector_bits={target.vector_bits}, "
          f"OpenMP threads: {num_threads()}")
    rng = np.random.default_rng(0)
    figures = {}
    for label, M, N, K in SIZES:
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        c = np.empty((M, N), np.float32)
        ref = np.empty((M, N), np.float32)
        np.matmul(a, b, out=ref)
        flops = 2.0 * M * N * K
        best = None
        for cfg in candidate_configs(target.vector_bits):
            if N % cfg.nb:
                continue
            f, compile_s = build(M, N, K, cfg)
            c.fill(0)
            f(a, b, c)
            np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.sqrt(K))
            t = best_time(lambda: f(a, b, c), opts.repeat)
            print(f"  {label}: mr={cfg.mr} nb={cfg.nb} kb={cfg.kb}: {flops / t / 1e9:8.1f} GFLOP/s")
            if best is None or t < best[0]:
                best = (t, cfg, compile_s, f)
        t_ours, cfg, compile_s, f = best
        t_np = float("inf")
        for _ in range(opts.rounds):    # alternate, so both see the same machine load
            t_np = min(t_np, best_time(lambda: np.matmul(a, b, out=ref), opts.repeat))
            t_ours = min(t_ours, best_time(lambda: f(a, b, c), opts.repeat))
        ours, theirs = flops / t_ours / 1e9, flops / t_np / 1e9
        print(f"matmul {label}: ours {ours:.1f} GFLOP/s (mr={cfg.mr} nb={cfg.nb} kb={cfg.kb}), "
              f"numpy {theirs:.1f} GFLOP/s, ratio {ours / theirs:.2f}, compile {compile_s:.2f} s")
        figures[f"matmul_{label}_gflops"] = round(ours, 1)
        figures[f"numpy_{label}_gflops"] = round(theirs, 1)
        figures[f"ratio_vs_numpy_{label}"] = round(ours / theirs, 3)
        if label == "1024":
            figures["compile_s"] = round(compile_s, 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
