"""Which layers of a bf16 build stay fp32: the shortest prefix that meets the cosine bar.

Rounding a layer's activations and weights to bf16 (8-bit significand, relative error up to
2^-9) perturbs its output; every later layer carries the perturbation on, and in a deep
network without trained-in robustness it grows. So the layers nearest the input cost the
most: on MobileNetV2 (seeded random weights, 224 x 224; emulated) all 35 bf16-able layers in
bf16 give cosine 0.99849 to fp32, keeping any single layer in fp32 at most 0.99894 (the
first ones gain most, the classifier nothing), no layer kind stands out (keeping all 17 1x1
projections fp32: 0.99872, all 17 activated convs: 0.99904, with half the MACs), while
keeping the first 4 layers (16 % of the MACs) gives 0.99918 and the first 8 (29 %) 0.99964.
Activation and weight rounding weigh alike (each alone: 0.99912 / 0.99901); the rounding is
to nearest even already. ResNet-18 keeps 0.999995 with every layer in bf16.

The rule (:func:`choose`): candidates are the DENSE and CONV2D nodes that a bf16 build can
run in bf16 (depthwise and grouped convs never do), in topological order; keep the shortest
prefix of them in fp32 whose *emulated* output (``compiler.graph.reference`` with the
candidates' inputs and weights rounded to bf16, ties to even, as the kernels do: it matches
the built module to cosine 0.999998) loses at most :data:`MARGIN` of the allowed cosine
loss ``1 - MIN_COSINE`` against the fp32 output on a seeded standard-normal input (integer
inputs: zeros); the prefix length is found by bisection. The margin is there because the
loss varies from input to input: on MobileNetV2 at 224, over six inputs, by up to 30 % about
its mean (all in bf16: 9.9e-4 to 13.7e-4; first 2 fp32: 9.1e-4 to 11.6e-4; first 4:
5.3e-4 to 8.3e-4; first 6: 4.5e-4 to 6.5e-4). A model that meets the target all in bf16
costs one emulation more than the fp32 reference; MobileNetV2 about six.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.graph import Graph, Node, Op
from compiler.graph import reference
from compiler.topi.x86_bf16 import from_bf16_bits, to_bf16_bits

from .bf16 import BF16_OPS

#: the issue's bar: cosine similarity of the bf16 output to the fp32 one
MIN_COSINE = 0.999
#: the share of the allowed loss (1 - MIN_COSINE) the emulation on one input may use
MARGIN = 0.5


@dataclass(frozen=True)
class Bf16Plan:
    """The outcome of :func:`choose`: the candidate layers (topological order), how many of
    the first ones stay fp32, the emulated cosine with that choice and the cosine it aimed
    at."""

    candidates: tuple[Node, ...]
    n_fp32: int
    cosine: float
    target: float

    @property
    def keep_fp32(self) -> tuple[Node, ...]:
        return self.candidates[:self.n_fp32]

    def stats(self) -> dict:
        """For ``CompiledModel.stats["bf16"]`` and the build report."""
        return {"candidates": len(self.candidates), "fp32_prefix": self.n_fp32,
                "fp32_layers": [n.label or n.op.name.lower() for n in self.keep_fp32],
                "emulated_cosine": round(self.cosine, 6), "target_cosine": self.target}


def candidates(graph: Graph) -> tuple[Node, ...]:
    """The DENSE and CONV2D nodes of ``graph`` a bf16 build may run in bf16 (not grouped
    convs), producers first."""
    return tuple(n for n in graph.nodes()
                 if n.op in BF16_OPS and not (n.op is Op.CONV2D and n.attr("groups", 1) != 1))


def _bf16(a: np.ndarray) -> np.ndarray:
    return from_bf16_bits(to_bf16_bits(a)) if a.dtype == np.float32 else a


def emulate(graph: Graph, params, inputs, bf16: "set[Node]") -> list[np.ndarray]:
    """``graph``'s outputs from the numpy reference, the nodes in ``bf16`` reading their
    input and weight rounded to bf16 (float32 arrays of the outputs' shapes)."""
    def hook(node, args):
        return [_bf16(a) for a in args[:2]] + args[2:] if node in bf16 else args
    return reference.run(graph, params, inputs, args_hook=hook)


def cosine(a: list, b: list) -> float:
    """Cosine similarity of two output lists, all outputs flattened into one vector."""
    x = np.concatenate([np.asarray(v, np.float64).ravel() for v in a])
    y = np.concatenate([np.asarray(v, np.float64).ravel() for v in b])
    den = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / den) if den else float(np.array_equal(x, y))


def seeded_inputs(graph: Graph, seed: int = 0) -> dict:
    """name -> a standard-normal array of each float INPUT's shape (integer ones: zeros)."""
    rng = np.random.default_rng(seed)
    return {n.name: rng.standard_normal(n.shape).astype(n.dtype)
            if np.issubdtype(np.dtype(n.dtype), np.floating) else np.zeros(n.shape, n.dtype)
            for n in graph.inputs}


def choose(graph: Graph, params, min_cosine: float = MIN_COSINE, margin: float = MARGIN,
           seed: int = 0) -> Bf16Plan:
    """The shortest prefix of :func:`candidates` to keep in fp32 whose emulated cosine is at
    least ``1 - margin * (1 - min_cosine)`` (module docstring).

    Args:
        graph: the graph with batch norm folded (``optimize(..., fuse=False)``: the
            weights the kernels round), params its constants.
        min_cosine: the bar, in (0, 1].
        margin: the share of the allowed loss the emulation may use, in (0, 1].
        seed: of the input the emulation runs on.

    Raises:
        ValueError: ``min_cosine`` or ``margin`` outside (0, 1].
    """
    for what, v in (("min_cosine", min_cosine), ("margin", margin)):
        if not 0 < v <= 1:
            raise ValueError(f"{what} must be in (0, 1], not {v!r}")
    target = 1 - margin * (1 - min_cosine)
    cands = candidates(graph)
    inputs = seeded_inputs(graph, seed)
    want = reference.run(graph, params, inputs)
    score = {len(cands): 1.0}

    def cos(k: int) -> float:
        if k not in score:
            score[k] = cosine(emulate(graph, params, inputs, set(cands[k:])), want)
        return score[k]
    lo, hi = 0, len(cands)          # invariant: cos(hi) >= target; cos(lo - 1) < target
    if cos(0) < target:
        lo = 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cos(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
    else:
        hi = 0
    return Bf16Plan(cands, hi, score[hi], target)
