"""Shared helpers for the simulator tests: a tiny program builder."""
from __future__ import annotations

import numpy as np
import pytest

from vta_hw.config import load_config
from vta_hw.program import DramLayout, Program

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


class Builder:
    """Allocate buffers (with data), then uops, then build the program.

    ``b.buf(name, array)`` returns the buffer's base in elements of ``mem``
    through ``b.at(name, mem)``; ``b.uops(list)`` returns the uop base
    (uop elements); ``b.program(insns)`` the Program.
    """

    def __init__(self, cfg):
        self.cfg = cfg
        self.layout = DramLayout(cfg)
        self.specs = {}
        self._uops = []

    def buf(self, name: str, data=None, *, shape=None, dtype="int8", kind="input"):
        if data is not None:
            data = np.asarray(data)
            shape, dtype = data.shape, data.dtype.name
        self.specs[name] = self.layout.alloc(name, shape, dtype, kind, data)
        return self.specs[name]

    def at(self, name: str, mem: str) -> int:
        return self.layout.elem(self.specs[name], mem)

    def uops(self, uops) -> int:
        self._uops = list(uops)
        return self.layout.alloc_uops(len(self._uops))

    def program(self, insns) -> Program:
        return self.layout.finish(list(insns), self._uops)


@pytest.fixture
def small_cfg():
    return load_config(SMALL)


@pytest.fixture
def builder(small_cfg):
    return Builder(small_cfg)
