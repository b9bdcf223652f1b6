"""Seed sweeps: place and route one netlist with several nextpnr seeds, keep the fastest.

Placement is randomized; its seed moves a design's Fmax by several MHz when the
margin is small (``docs/fpga-timing.md``). ``sweep(seeds, run_one, workers=...)``
runs ``run_one(seed)`` for every seed, ``workers`` at a time, and returns one
``SeedResult`` per seed in seed order; ``best(results)`` picks the one to keep.
A seed that fails or runs past its limit (``run_one`` raises a ``VtaError``, e.g.
``vta_hw.tool.ToolTimeout``) is reported in its result, not raised: the other
seeds still count. ``fpga.build`` supplies ``run_one`` (nextpnr and the packer in
a folder per seed, each under ``STEP_LIMIT_S``); the workers are those tool
processes, so ``workers`` is at most the machine's cores.
"""
from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from vta_hw.errors import VtaError


@dataclasses.dataclass(frozen=True)
class SeedResult:
    """One seed's outcome: ``fmax_mhz`` (MHz) of the SoC clock, or ``error`` (a message)."""
    seed: int
    fmax_mhz: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.fmax_mhz is not None


class SeedSweepError(VtaError, RuntimeError):
    """No seed of a sweep gave an Fmax; the message lists each seed's error."""


def default_workers(n_seeds: int) -> int:
    """Seeds placed at once: ``min(n_seeds, os.cpu_count())`` (nextpnr uses one core each)."""
    return max(1, min(n_seeds, os.cpu_count() or 1))


def sweep(seeds: Sequence[int], run_one: Callable[[int], float | None], *, workers: int,
          log=print) -> list[SeedResult]:
    """Run ``run_one(seed) -> Fmax in MHz (or None when not reported)`` for every seed.

    Args:
        seeds: the nextpnr seeds (positive ints, distinct).
        run_one: places and routes one seed; raises ``VtaError`` when that seed fails
            (its message goes into the result); any other exception is a bug and propagates.
        workers: seeds run at once (``default_workers``).
        log: one line per finished seed.

    Returns:
        One ``SeedResult`` per seed, in the order of ``seeds``.
    """
    def one(seed: int) -> SeedResult:
        try:
            fmax = run_one(seed)
        except VtaError as e:
            res = SeedResult(seed, error=str(e))
        else:
            res = SeedResult(seed, fmax, None if fmax is not None else "nextpnr reported no Fmax")
        log(f"  seed {seed}: " + (f"Fmax {res.fmax_mhz:.2f} MHz" if res.ok
                                  else f"FAILED: {res.error}"))
        return res

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, seeds))


def best(results: Sequence[SeedResult]) -> SeedResult:
    """The result with the highest Fmax (the lowest seed among equals).

    Raises:
        SeedSweepError: no seed gave an Fmax; names every seed's error.
    """
    ok = [r for r in results if r.ok]
    if not ok:
        errors = "; ".join(f"seed {r.seed}: {r.error}" for r in results)
        raise SeedSweepError(f"no seed placed and routed ({errors}); see each seed's folder "
                             f"seed<N>/ in the build folder, or build with one seed")
    return max(ok, key=lambda r: (r.fmax_mhz, -r.seed))


def as_table(results: Sequence[SeedResult]) -> list[dict]:
    """``[{"seed", "fmax_mhz", "error"}]`` for ``report.json`` (``fmax_mhz`` in MHz to two
    decimals as the report's own, None on failure)."""
    return [{"seed": r.seed, "fmax_mhz": None if r.fmax_mhz is None else round(r.fmax_mhz, 2),
             "error": r.error} for r in results]
