"""FPGA fixtures: one bitstream build per (board, preset, clock) per session."""
from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

#: builds that run at once: each tool chain (Yosys, then nextpnr) is one process on one core
PARALLEL_BUILDS = 2


class Builds:
    """``builds(board, preset, clock_mhz=None) -> (report or None, FpgaBuildError or None)``.

    Each build runs once per session, in its own process (so two overlap on two cores) and
    in a session temp folder; ``start`` queues builds that tests will ask for later.
    """

    def __init__(self, tmp_path_factory):
        self._tmp = tmp_path_factory
        self._pool = ProcessPoolExecutor(PARALLEL_BUILDS,
                                         mp_context=multiprocessing.get_context("spawn"))
        self._started = {}

    def _key(self, board, preset, clock_mhz):
        from fpga.boards import BOARDS
        return board, preset, float(clock_mhz or BOARDS[board].clock_mhz)

    def start(self, board: str, preset: str, clock_mhz: float | None = None) -> None:
        from fpga.build import build
        key = self._key(board, preset, clock_mhz)
        if key not in self._started:
            out = self._tmp.mktemp(f"{board}_{preset}")
            # the log goes to a logger without handlers: quiet, and picklable for the worker
            self._started[key] = self._pool.submit(build, *key, out,
                                                   log=logging.getLogger("fpga.build").debug)

    def __call__(self, board: str, preset: str, clock_mhz: float | None = None):
        from fpga.build import FpgaBuildError
        self.start(board, preset, clock_mhz)
        try:
            return self._started[self._key(board, preset, clock_mhz)].result(), None
        except FpgaBuildError as e:
            return None, e

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def fpga_build(tmp_path_factory):
    """The session's ``Builds``: every test asking for a (board, preset, clock) shares it."""
    builds = Builds(tmp_path_factory)
    yield builds
    builds.close()
