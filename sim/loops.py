"""The GEMM/ALU uop loop: its index arithmetic, bounds from its extents, and chunks.

An instruction's iterations run in loop order ``o < iter_out``, ``i < iter_in``,
``u in [uop_bgn, uop_end)`` (iteration ``k = (o * iter_in + i) * n_uops + u``)
and compute, per index name (dst, src, wgt),
``uop[u].name + o * name_factor_out + i * name_factor_in``.

Extents fit their fields (14 bits each) yet ``iter_out * iter_in`` reaches
2**28 iterations per uop, so nothing here builds an array over every
iteration: ``first_past`` finds the first out-of-range iteration from the
extents in O(uops), ``entries`` gives the distinct indices in memory bounded by
the largest one, and ``chunks`` hands the iterations out a bounded block
at a time.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Uop iterations per chunk: bounds one step's temporaries (a GEMM chunk holds its
#: weights as float32, 16 MiB at 16x16 blocks).
CHUNK_ITERS = 1 << 14

_COL = {"dst": 0, "src": 1, "wgt": 2}


def first_past(insn, uops: np.ndarray, name: str, depth: int) -> tuple[int, int] | None:
    """``(k, index)`` of the first iteration (loop order) whose ``name`` index is
    ``>= depth``, or None if every iteration stays inside; O(number of uops).

    Args:
        insn: a ``Gemm`` or ``Alu`` record.
        uops: the uop SRAM rows ``[uop_bgn, uop_end)``, shape ``(n, 3)`` int64.
        name: "dst", "src" or "wgt".
        depth: the SRAM's entries.
    """
    base = uops[:, _COL[name]]
    n_out, n_in = insn.iter_out, insn.iter_in
    if base.size == 0 or n_out == 0 or n_in == 0:
        return None
    f_out, f_in = getattr(insn, f"{name}_factor_out"), getattr(insn, f"{name}_factor_in")
    top = int(base.max())
    if top + (n_out - 1) * f_out + (n_in - 1) * f_in < depth:
        return None
    # The factors are unsigned, so the index grows with o, then i: take the smallest o
    # for which some (i, u) reaches depth, then the smallest i, then the first u.
    need = depth - top - (n_in - 1) * f_in
    o = 0 if need <= 0 else -(-need // f_out)
    need = depth - top - o * f_out
    i = 0 if need <= 0 else -(-need // f_in)
    off = o * f_out + i * f_in
    u = int(np.argmax(base + off >= depth))
    return (o * n_in + i) * base.size + u, int(base[u]) + off


def entries(insn, uops: np.ndarray, name: str) -> np.ndarray:
    """The distinct ``name`` indices over every iteration, sorted (1-D int64); built a
    chunk at a time into a mask as long as the largest index, which the caller has
    bounded first (``first_past``), so a 2**28-iteration loop costs a few MiB."""
    base = uops[:, _COL[name]]
    if base.size == 0 or insn.iter_out == 0 or insn.iter_in == 0:
        return np.zeros(0, np.int64)
    top = (int(base.max()) + (insn.iter_out - 1) * getattr(insn, f"{name}_factor_out")
           + (insn.iter_in - 1) * getattr(insn, f"{name}_factor_in"))
    seen = np.zeros(top + 1, bool)
    for (idx,) in chunks(insn, uops, (name,)):
        seen[idx] = True
    return np.flatnonzero(seen)


def chunks(insn, uops: np.ndarray, names: tuple[str, ...],
           max_iters: int = CHUNK_ITERS) -> Iterator[list[np.ndarray]]:
    """Per block of consecutive iterations (loop order), the index of each name:
    a list of 1-D int64 arrays, each of at most ``max(max_iters, n_uops)`` entries."""
    n_uops = uops.shape[0]
    pairs = insn.iter_out * insn.iter_in
    if n_uops == 0 or pairs == 0:
        return
    step = max(1, max_iters // n_uops)
    for p0 in range(0, pairs, step):
        p = np.arange(p0, min(pairs, p0 + step), dtype=np.int64)
        o, i = p // insn.iter_in, p % insn.iter_in
        out = []
        for name in names:
            off = (o * getattr(insn, f"{name}_factor_out")
                   + i * getattr(insn, f"{name}_factor_in"))
            out.append((uops[:, _COL[name]][None, :] + off[:, None]).reshape(-1))
        yield out
