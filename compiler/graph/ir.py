"""Graph IR: one immutable `Node` type and the `Graph` that holds inputs and outputs.

A node is a frozen dataclass: `op` (an `Op`), `src` (input nodes), `attrs`
(sorted tuple of (name, value) pairs, values hashable: ints, floats, strings,
tuples, or a `Graph` for `Op.FUSED`), the inferred output `shape` (tuple of
ints, static) and `dtype` ("float32", "int64", "uint8", ...), and `name`
(the tensor name of an INPUT or PARAM; empty otherwise). `label` is a debug
name (the ONNX node name) and takes no part in equality.

Structurally equal nodes compare and hash equal; the hash is computed once at
construction from the children's hashes, so hashing a DAG with shared
sub-graphs (residual blocks) is O(1) per node.

Build nodes with `make(op, *src, **attrs)`, which runs the op's shape/type
inference (raises `GraphError` on bad input), or `input_node` / `param_node`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .errors import GraphError
from .ops import Op


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return tuple(_freeze(v) for v in value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One operator application (or a leaf). See the module docstring for fields."""

    op: Op
    src: tuple["Node", ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    name: str = ""
    label: str = field(default="", compare=False)
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.op, tuple(s._hash for s in self.src), self.attrs,
                                                self.shape, self.dtype, self.name)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Node) or self._hash != other._hash:
            return False
        # iterative, memoized over node pairs: shared sub-DAGs are compared once
        stack, seen = [(self, other)], set()
        while stack:
            a, b = stack.pop()
            if a is b or (id(a), id(b)) in seen:
                continue
            if (a._hash != b._hash or a.op is not b.op or a.attrs != b.attrs or a.shape != b.shape
                    or a.dtype != b.dtype or a.name != b.name or len(a.src) != len(b.src)):
                return False
            seen.add((id(a), id(b)))
            stack.extend(zip(a.src, b.src))
        return True

    def attr(self, key: str, default: Any = None) -> Any:
        """The attribute `key`, or `default` when absent."""
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def attr_dict(self) -> dict[str, Any]:
        return dict(self.attrs)

    @property
    def nbytes(self) -> int:
        """Size of this node's output in bytes."""
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def with_src(self, *src: "Node") -> "Node":
        """The same op and attributes over new inputs (shape/type re-inferred)."""
        return make(self.op, *src, label=self.label, **self.attr_dict)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.attrs if k != "body")
        tag = self.name or self.label
        return f"{self.op.name}({tag}{': ' if tag else ''}{self.dtype}{list(self.shape)}{'; ' if args else ''}{args})"


@dataclass(frozen=True, slots=True)
class Graph:
    """A dataflow graph: `inputs` (INPUT nodes, in call order) and `outputs` (any nodes).

    `output_names` name the outputs (ONNX output names); empty names are allowed
    for fused bodies. Parameters (weights) live outside, in a `dict[str, np.ndarray]`
    keyed by PARAM node names.
    """

    inputs: tuple[Node, ...]
    outputs: tuple[Node, ...]
    output_names: tuple[str, ...] = ()

    def nodes(self) -> list[Node]:
        """Every node reachable from the outputs, in topological order (inputs first)."""
        return toposort(self.outputs)

    def consumers(self) -> dict[Node, list[Node]]:
        """Map node -> distinct nodes that read it (graph outputs are not counted)."""
        users: dict[Node, list[Node]] = {}
        for n in self.nodes():
            for s in dict.fromkeys(n.src):
                users.setdefault(s, []).append(n)
        return users

    def params_used(self) -> set[str]:
        """Names of the PARAM nodes this graph (including fused bodies) reads."""
        used: set[str] = set()
        for n in self.nodes():
            if n.op is Op.PARAM:
                used.add(n.name)
            elif n.op is Op.FUSED:
                used |= n.attr("body").params_used()
        return used

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes())


def toposort(roots: tuple[Node, ...] | list[Node]) -> list[Node]:
    """Nodes reachable from `roots`, producers before consumers (iterative DFS, no recursion limit)."""
    order: list[Node] = []
    seen: set[int] = set()
    done: set[int] = set()
    for root in roots:
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            key = id(node)
            if expanded:
                if key not in done:
                    done.add(key)
                    order.append(node)
                continue
            if key in seen:
                continue
            seen.add(key)
            stack.append((node, True))
            for s in reversed(node.src):
                if id(s) not in seen:
                    stack.append((s, False))
    # structurally equal but distinct objects are the same value: dedupe by equality
    return list(dict.fromkeys(order))


def input_node(name: str, shape: tuple[int, ...], dtype: str = "float32") -> Node:
    """A graph input. Raises GraphError for a non-positive dimension."""
    shape = tuple(int(d) for d in shape)
    if any(d <= 0 for d in shape):
        raise GraphError(f"input {name!r}: every dimension must be a positive int, not {shape!r}")
    return Node(Op.INPUT, shape=shape, dtype=str(np.dtype(dtype)), name=name)


def param_node(name: str, value: np.ndarray) -> Node:
    """A PARAM node describing `value` (the array itself goes in the params dict under `name`)."""
    value = np.asarray(value)
    return Node(Op.PARAM, shape=tuple(int(d) for d in value.shape), dtype=str(value.dtype), name=name)


def make(op: Op, *src: Node, label: str = "", **attrs: Any) -> Node:
    """Build a node, inferring its shape and dtype from the op's registry entry.

    Raises GraphError (naming the op, the label and the bad value) when the
    inputs or attributes are invalid for `op`.
    """
    from .registry import lookup

    frozen = tuple(sorted((k, _freeze(v)) for k, v in attrs.items()))
    opdef = lookup(op)
    try:
        shape, dtype = opdef.infer(src, dict(frozen))
    except GraphError as exc:
        where = f" (node {label!r})" if label else ""
        raise GraphError(f"{op.name}{where}: {exc}") from None
    return Node(op, tuple(src), frozen, tuple(int(d) for d in shape), str(np.dtype(dtype)), "", label)
