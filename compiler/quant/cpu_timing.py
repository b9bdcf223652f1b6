"""Time one node's int8 CPU kernel on this machine (the CPU side of ``placement``).

The kernel is the one the module would run (``kernels.cpu_kernel``), built with
``compiler.build`` for ``target`` (host JIT, LLVM) and called on seeded random inputs of
the node's source shapes and dtypes, with its constants (weights, bias, shift tables)
and workspace. The figure is the fastest of repeated calls after one warm-up call,
repeated until ``budget_s`` seconds or ``max_reps`` calls (on a loaded machine a
parallel region can wait a scheduler time slice: the fastest call is the kernel's time).
"""
from __future__ import annotations

import time

import numpy as np

from .kernels import cpu_kernel
from .qgraph import QGraph


def _random(shape, dtype, rng) -> np.ndarray:
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -128), min(info.max, 127) + 1, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def kernel_seconds(qg: QGraph, i: int, target="llvm", *, budget_s: float = 0.05,
                   max_reps: int = 20, seed: int = 0) -> float:
    """Seconds of the fastest call of node ``i``'s CPU kernel on this machine.

    Raises:
        ValueError: the node has no CPU kernel (``kernels.cpu_kernel``).
    """
    import compiler.build
    n = qg.nodes[i]
    kd = cpu_kernel(n, [qg.nodes[s] for s in n.src], qg.params, f"time_n{i}", target)
    mod = compiler.build(kd.schedule, kd.args, target=target, name=f"time_n{i}")
    rng = np.random.default_rng(seed)
    args = [_random(tuple(int(d) for d in t.shape), t.dtype, rng) for t in kd.args[:kd.n_inputs]]
    args += [np.ascontiguousarray(c) for c in kd.constants]
    args += [np.zeros(tuple(int(d) for d in t.shape), t.dtype)
             for t in kd.args[len(args):]]
    mod(*args)   # warm-up (page faults, thread pool start)
    times, start = [], time.perf_counter()
    while len(times) < max_reps and (len(times) < 3 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        mod(*args)
        times.append(time.perf_counter() - t0)
    return float(min(times))
