"""The config space of a fused group's GPU kernels (the ``topi.gpu.stage`` template).

A group becomes one kernel launch per root stage (``gpu.gpu_stages``). Its space
holds the knobs that apply to some of those stages, one value for the whole group:

==========  ==========================================================  ==========
knob        what it sets                                                default
==========  ==========================================================  ==========
threads     block tile: threads per block (at most the stage's own);     "auto"
            "auto" is 256, halved down to 64 for small grids
tile        thread tile: output channels of a packed conv per thread     "auto"
split_k     parts of a split-K reduction (1: none)                       "auto"
ptile       thread tile of the split-K partial sums (last axis)          "auto"
vector      vector width of the stages without reductions (last axis)    1
unroll      ``topi.gpu.stage.UNROLL``: the tile loops, none, or the      "tile"
            tile and the innermost reduce loop as well
shared      shared-memory staging of a per-thread reduction's inputs,    0
            N iterations of its first reduce axis a step (0: off)
==========  ==========================================================  ==========

``"auto"`` is today's heuristic for that stage (``_bind_threads``'s adaptive block,
``conv_tile``, ``split_k_factor``, 4 where the last axis allows it), so the default
point prints today's kernels exactly. A knob appears only where the group has a stage it changes, with the
candidates every such stage accepts. Each knob is one :class:`GpuKnob` entry of
:data:`KNOBS`: a new knob is a new entry, and ``gpu_stages`` reads it by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compiler.te.tensor import Tensor
from compiler.topi.gpu.stage import UNROLL

from .space import Config, ConfigSpace, Knob

AUTO = "auto"


@dataclass(frozen=True)
class StageInfo:
    """One root stage of a group, cut out (``stage.split_stage``): its output ``out`` and
    the reductions ``reds`` it computes per thread."""

    out: Tensor
    reds: tuple

    @property
    def conv_block(self) -> int:
        """Channels per block of a packed-conv accumulator read by ``out`` (0: not one)."""
        from compiler.topi.gpu.stage import conv_tile
        if conv_tile(self.out, list(self.reds), min_threads=1) <= 1:
            return 0
        return self.reds[0].shape[4]

    @property
    def split_axis(self) -> int:
        """Extent of the reduce axis a split-K would cut (0: the stage has no such reduction)."""
        from compiler.topi.gpu.stage import split_k_factor
        if len(self.reds) != 1 or split_k_factor(self.reds[0], 1, min_threads=1 << 62,
                                                 min_chunk=1) == 1:
            return 0
        return self.reds[0].op.reduce_axis[0].extent

    @property
    def staged_axis(self) -> int:
        """Extent of the first reduce axis of the one reduction computed per thread, whose
        inputs shared-memory staging would copy (0: the stage has no such reduction)."""
        if len(self.reds) != 1 or self.out.op.reduce_axis or not self.reds[0].op.reduce_axis:
            return 0
        return self.reds[0].op.reduce_axis[0].extent

    @property
    def last_axis(self) -> int:
        """Extent of the last axis of a stage without reductions (0: it has some)."""
        if self.reds or self.out.op.reduce_axis or not self.out.shape:
            return 0
        return self.out.shape[-1]


def _pow2_dividing(ns: list, top: int) -> tuple:
    return tuple(p for p in (1 << i for i in range(top.bit_length())) if p <= top
                 and all(n % p == 0 for n in ns))


@dataclass(frozen=True)
class GpuKnob:
    """A knob of the GPU template: ``candidates(stages)`` (an empty tuple or one value: no
    knob for this group) and its ``default``."""

    name: str
    candidates: Callable[[list], tuple]
    default: object


def _threads(stages):
    return (AUTO, 64, 128, 256, 512, 1024)


def _tile(stages):
    blocks = [s.conv_block for s in stages if s.conv_block]
    return (AUTO,) + _pow2_dividing(blocks, min(blocks)) if blocks else ()


def _split_k(stages):
    ks = [s.split_axis for s in stages if s.split_axis]
    return (AUTO,) + _pow2_dividing(ks, min(min(ks), 32)) if ks else ()


def _ptile(stages):
    lasts = [s.reds[0].shape[-1] for s in stages if s.split_axis]
    return (AUTO,) + _pow2_dividing(lasts, min(min(lasts), 8)) if lasts else ()


def _vector(stages):
    lasts = [s.last_axis for s in stages if s.last_axis]
    return _pow2_dividing(lasts, 4) if lasts else ()


def _shared(stages):
    ks = [s.staged_axis for s in stages if s.staged_axis]
    if not ks:
        return ()
    return (0,) + tuple(c for c in (4, 8, 16) if all(k % c == 0 and k > c for k in ks))


def _unroll(stages):
    return UNROLL if any(s.reds or s.out.op.reduce_axis or s.conv_block for s in stages) else ()


#: the knobs, in the order of the space
KNOBS = (
    GpuKnob("threads", _threads, AUTO),
    GpuKnob("tile", _tile, AUTO),
    GpuKnob("split_k", _split_k, AUTO),
    GpuKnob("ptile", _ptile, AUTO),
    GpuKnob("vector", _vector, 1),
    GpuKnob("unroll", _unroll, "tile"),
    GpuKnob("shared", _shared, 0),
)


def space_of(stages: list) -> ConfigSpace:
    """The space of a group whose root stages are ``stages`` (:class:`StageInfo` s)."""
    knobs = []
    for k in KNOBS:
        cands = k.candidates(stages)
        if len(cands) > 1:
            knobs.append(Knob(k.name, cands, k.default))
    return ConfigSpace(tuple(knobs))


def value(config: "Config | None", name: str):
    """``config[name]``, or the knob's default where the config (or its space) lacks it."""
    if config is not None and name in config.as_dict():
        return config[name]
    return next(k.default for k in KNOBS if k.name == name)
