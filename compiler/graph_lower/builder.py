"""The state of one fused group while its implementations declare their stages.

Implementations (``compiler.graph_lower.impls``) receive a :class:`Builder`:
fresh stage names, workspace tensors (scratch the runtime provides),
compile-time constant tables, which group inputs arrive packed, and, once a
master op is declared, the group's :class:`~compiler.graph_lower.master.Master`.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.graph import Node
from compiler.topi.injective import Lazy

from .master import Master


class Builder:
    """Declaration state of the kernel ``name``.

    Attributes:
        workspace: te tensors computed at the root into runtime-provided scratch.
        constants: (placeholder, numpy array) pairs, compile-time tables.
        packed: body input node -> packing tag of the constant that feeds it already
            packed (``packing.pack_param``).
        master: the group's master, once declared.
    """

    def __init__(self, name: str, packed: "dict[Node, str]"):
        self.name = name
        self.count = 0
        self.workspace: list = []
        self.constants: list = []
        self.packed = packed
        self.master: "Master | None" = None

    def fresh(self, base: str) -> str:
        """A stage name unique within this kernel: ``base`` plus a counter."""
        self.count += 1
        return f"{base}{self.count}"

    def constant(self, value: np.ndarray) -> Lazy:
        """A compile-time table passed to the kernel as an extra (constant) input."""
        value = np.ascontiguousarray(value)
        ph = te.placeholder(value.shape, str(value.dtype), f"c{len(self.constants)}")
        self.constants.append((ph, value))
        return view(ph)

    def tensor_of(self, x: Lazy, name: str):
        """A te tensor holding ``x`` (the placeholder itself when ``x`` is one)."""
        if getattr(x, "_tensor", None) is not None:
            return x._tensor
        t = x.materialize(self.fresh(name))
        self.workspace.append(t)
        return t


def view(t) -> Lazy:
    """The Lazy view of te tensor ``t`` that remembers ``t`` (so ``tensor_of`` reuses it)."""
    lz = Lazy.of(t)
    object.__setattr__(lz, "_tensor", t)
    return lz
