"""Compile-time re-layouts of constant weights: a registry of packings, keyed by tag.

An implementation asks for a packed constant with a tag ``"<kind>:<block>"``
(``Implementation.packs``); the lowering declares the input in the packed shape and
dtype (:func:`packed_type`) and the build applies the packing to the parameter once
(:func:`pack_param`). A packing may change the dtype: the bf16 ones store int16 bit
patterns, so a bf16 kernel reads its weights already rounded.

======================  ==========================  =====================================
kind                    from                        to
======================  ==========================  =====================================
``conv``                OIHW float32                ``[ceil(O/ob), I, KH, KW, ob]`` float32
``dense``               ``[N, K]``                  ``[ceil(N/nb), K, nb]``
``dense_t``             ``[K, N]``                  ``[ceil(N/nb), K, nb]``
``dense_bf16``          ``[N, K]`` float32          ``[ceil(N/16), ceil(K/2), 16, 2]`` int16
``conv_bf16``           OIHW float32                ``[ceil(O/16), ceil(I/2), KH, KW, 16, 2]``
                                                    int16
``conv_bf16_amx``       OIHW float32                ``[ceil(O/16), KH, KW, ceil(I/32), 16, 16,
                                                    2]`` int16: one 1 KiB AMX B tile per
                                                    (16 outputs, tap, 32 inputs)
``strassen1`` ...       ``[N, K]`` float32             ``[7**L, N/g/nb, K/g, nb]``, ``g = 2**L``:
``winograd2``                                       the fast matmul's right operands
                                                    (``compiler.topi.strassen``; L levels)
``strassen1_t`` ...     ``[K, N]`` float32             the same
``winograd2_t``
``wino2``, ``wino4``    OIHW float32, 3x3           ``[a, a, O/ob, I, ob]`` float32, a = m + 2:
                                                    the Winograd F(mxm, 3x3) weight transform
                                                    (O padded up to a multiple of ob)
                                                    G g G^T (``compiler.topi.winograd``)
======================  ==========================  =====================================

(the bf16 layouts: ``compiler.topi.x86_bf16``, ``compiler.topi.x86_amx``; where the
block does not divide the output channels / columns, every packing pads them with zeros;
the bf16 ones take the block 16.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from compiler.topi import conv2d as tconv
from compiler.topi import dense as tdense
from compiler.topi import strassen as tstrassen
from compiler.topi import winograd as twino
from compiler.topi import x86_amx, x86_bf16


@dataclass(frozen=True)
class Packing:
    """One packing: ``pack(value, block) -> array``, ``shape(shape, block) -> packed shape``
    and the packed dtype (None: the parameter's own)."""

    pack: Callable[[np.ndarray, int], np.ndarray]
    shape: Callable[[tuple, int], tuple]
    dtype: "str | None" = None


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _bf16_conv_shape(shape, b):
    O, I, KH, KW = shape
    return (_ceil(O, b), _ceil(I, 2), KH, KW, b, 2)


#: packing kind -> :class:`Packing`
PACKINGS: dict[str, Packing] = {
    "conv": Packing(tconv.pack_conv_kernel,
                    lambda s, b: (_ceil(s[0], b), s[1], s[2], s[3], b)),
    "dense": Packing(tdense.pack_dense_weight, lambda s, b: (_ceil(s[0], b), s[1], b)),
    "dense_t": Packing(lambda v, b: tdense.pack_dense_weight(np.ascontiguousarray(v.T), b),
                       lambda s, b: (_ceil(s[1], b), s[0], b)),
    "dense_bf16": Packing(lambda v, b: x86_bf16.pack_bf16_weight(v),
                          lambda s, b: (_ceil(s[0], b), _ceil(s[1], 2), b, 2), "int16"),
    "conv_bf16": Packing(lambda v, b: x86_bf16.pack_bf16_conv_weight(v),
                         _bf16_conv_shape, "int16"),
    "conv_bf16_amx": Packing(lambda v, b: x86_amx.pack_amx_conv_weight(v, "bfloat16"),
                             lambda s, b: (_ceil(s[0], 16), s[2], s[3], _ceil(s[1], 32), 16, 16, 2),
                             "int16"),
    "wino2": Packing(lambda v, b: twino.transform_weight(v, 2, b),
                     lambda s, b: (4, 4, _ceil(s[0], b), s[1], b)),
    "wino4": Packing(lambda v, b: twino.transform_weight(v, 4, b),
                     lambda s, b: (6, 6, _ceil(s[0], b), s[1], b)),
}


def _fast_matmul(algorithm: str, levels: int, transposed: bool) -> Packing:
    """``{algorithm}{levels}`` (from ``[N, K]``) or ``..._t`` (from ``[K, N]``): the fast
    matmul's right operands."""
    def kn(v):
        return np.asarray(v) if transposed else np.asarray(v).T
    return Packing(lambda v, b: tstrassen.pack_strassen_weight(kn(v), algorithm, levels, b),
                   lambda s, b: tstrassen.strassen_weight_shape(s if transposed else s[::-1],
                                                                levels, b))


PACKINGS.update({f"{a}{n}{'_t' if t else ''}": _fast_matmul(a, n, t)
                 for a in tstrassen.ALGORITHMS for n in (1, 2) for t in (False, True)})


def _parse(tag: str) -> tuple[Packing, int]:
    kind, _, block = tag.partition(":")
    if kind not in PACKINGS or not block.isdigit():
        raise ValueError(f"packing tag must be '<kind>:<block>' with kind one of "
                         f"{sorted(PACKINGS)}, not {tag!r}")
    return PACKINGS[kind], int(block)


def pack_param(value: np.ndarray, tag: str) -> np.ndarray:
    """``value`` re-laid out as ``tag`` says (module docstring).

    Raises:
        ValueError: an unknown tag.
    """
    packing, block = _parse(tag)
    return packing.pack(np.asarray(value), block)


def packed_type(shape: tuple, dtype: str, tag: str) -> tuple[tuple, str]:
    """(shape, dtype) of a ``shape``/``dtype`` constant once packed as ``tag``."""
    packing, block = _parse(tag)
    return tuple(packing.shape(tuple(shape), block)), packing.dtype or dtype
