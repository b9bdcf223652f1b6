"""compiler.graph_lower.link_library: lowered kernels -> one host shared library (bytes)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from compiler import te
from compiler.graph_lower import link_library
from compiler.tir import lower


def _vadd(name: str):
    a = te.placeholder((16,), "float32", "A")
    b = te.placeholder((16,), "float32", "B")
    c = te.compute((16,), lambda i: a[i] + b[i], "C")
    return lower(te.create_schedule(c), [a, b, c], name)


def test_links_two_kernels_into_one_library(tmp_path):
    data = link_library([_vadd("add_one"), _vadd("add_two")], "llvm", fp_contract=False, opt_level=2)
    assert data[:4] == b"\x7fELF"
    path = tmp_path / "k.so"
    path.write_bytes(data)
    ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(path))
    a, b = np.arange(16, dtype="float32"), np.ones(16, "float32")
    c = np.zeros(16, "float32")
    fn = lib.add_two
    fn.argtypes = [ctypes.c_void_p] * 3
    fn.restype = ctypes.c_int32
    assert fn(a.ctypes.data, b.ctypes.data, c.ctypes.data) == 0
    np.testing.assert_array_equal(c, a + b)


def test_cross_target_is_refused_and_no_kernels_link_an_empty_library():
    with pytest.raises(ValueError, match="host only.*aarch64"):
        link_library([_vadd("k")], "llvm -mtriple=aarch64-linux-gnu")
    assert link_library([], "llvm")[:4] == b"\x7fELF"     # a model of identities only
