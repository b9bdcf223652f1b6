"""Six processes saving modules to one destination at once: every save succeeds, the
destination is always a whole, loadable module, and no temporary or old copy remains."""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from types import SimpleNamespace

import numpy as np

from compiler.graph_lower.module_file import write_module
from driver.runtime import open_folder

WRITERS, SAVES = 6, 4


def _module(k: int):
    """A module-shaped object whose files are big enough for saves to overlap."""
    rng = np.random.default_rng(k)
    return SimpleNamespace(
        graph_json={"inputs": [], "outputs": [], "writer": k}, targets=["llvm"], cpu=None,
        vta=None, stats={}, programs={}, files={"kernels.so": rng.bytes(1 << 20)},
        params={"w": rng.standard_normal(1 << 16).astype(np.float32)})


def _writer(dest: str, k: int, start, results) -> None:
    cm = _module(k)
    start.wait(30)
    try:
        for _ in range(SAVES):
            write_module(cm, dest)
        results.put((k, "ok"))
    except BaseException as e:  # report, not die: the parent names the failure
        results.put((k, f"{type(e).__name__}: {e}"))


def test_six_processes_saving_to_one_destination(tmp_path):
    dest = tmp_path / "m.vtamod"
    write_module(_module(99), dest)
    ctx = mp.get_context("fork")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(dest), k, start, results))
             for k in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    loads, deadline = 0, time.monotonic() + 120
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        src = open_folder(dest)  # raises if missing, partial or mixed
        assert src.graph["writer"] in range(WRITERS) or src.graph["writer"] == 99
        loads += 1
    for p in procs:
        p.join(10)
    outcomes = dict(results.get(timeout=10) for _ in procs)
    assert outcomes == {k: "ok" for k in range(WRITERS)}, outcomes
    assert loads > 0
    assert open_folder(dest).graph["writer"] in range(WRITERS)
    assert os.listdir(tmp_path) == ["m.vtamod"]  # no .partial-* / .old-* left
