import numpy as np
import pytest

from compiler import tir
from compiler.tir import interp


def _run(sch, args, inputs: dict, name="f"):
    """Lower `sch` with the verifier on, run it in the interpreter; returns arrays per arg name."""
    func = tir.lower(sch, args, name, check=True)
    arrays = {}
    for t in args:
        if t.name in inputs:
            arrays[t.name] = np.ascontiguousarray(inputs[t.name])
        else:
            arrays[t.name] = np.zeros(t.shape, t.dtype)
    interp.run(func, *(arrays[t.name] for t in args))
    return arrays, func


@pytest.fixture
def run():
    return _run


@pytest.fixture
def rand():
    rng = np.random.default_rng(0)

    def make(*shape, dtype="float32"):
        if np.dtype(dtype).kind == "f":
            return rng.standard_normal(shape).astype(dtype)
        return rng.integers(-5, 6, shape).astype(dtype)
    return make
