"""Helpers for the VTA operator tests: run a compiled kernel on the golden model."""
import numpy as np

from sim import functional
from sim.races import find_races


def run_kernel(k, x, w, b=None, seed=0):
    """Run kernel ``k`` on the functional simulator with a random token-respecting
    interleaving and hardware queue depths; return (output, races)."""
    img = k.program.dram_image(k.inputs(x, w, b))
    res = functional.run(k.program, img, schedule="random", seed=seed,
                         cmd_queue_depth=16, token_queue_depth=32)
    assert res.finished and not res.warnings, res.warnings
    return k.unpack(k.program.read(res.dram, "out")), find_races(k.program, img)


def rand_i8(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)
