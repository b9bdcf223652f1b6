"""FPGA fixtures: one bitstream build per (board, preset, clock) per session."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def fpga_build(tmp_path_factory):
    """``fpga_build(board, preset, clock_mhz=None) -> (report or None, FpgaBuildError or None)``.

    Builds run once per session each, in a session temp folder; the outcome
    (report, or the build error) is shared by every test that asks for it.
    """
    from fpga.build import FpgaBuildError, build
    done = {}

    def get(board: str, preset: str, clock_mhz: float | None = None):
        key = (board, preset, clock_mhz)
        if key not in done:
            out = tmp_path_factory.mktemp(f"{board}_{preset}")
            log = []
            try:
                done[key] = (build(board, preset, clock_mhz, out, log=log.append), None)
            except FpgaBuildError as e:
                done[key] = (None, e)
        return done[key]

    return get
