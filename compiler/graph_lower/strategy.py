"""Operator strategies: for each graph op, the implementations that can lower it.

TVM's operator strategy, in our shape. An :class:`Implementation` is one way
to lower one op: its name, the conditions under which it applies (checks on
the :class:`Workload`: the node's shapes, dtypes and attributes, the target's
architecture and CPU features, which inputs are constants), its compute
(declares ``te`` stages on a :class:`~compiler.graph_lower.builder.Builder`),
and, for a group's master op, its kind, its schedule template, its config
space (:mod:`compiler.graph_lower.space`) and which constant inputs it wants
packed at compile time.

The implementations are registered beside their siblings in
``compiler/graph_lower/impls/`` (one module per op family), as the graph's ops
are in ``compiler/graph/opdefs/``. :meth:`Registry.select` picks, among the
implementations whose conditions hold, the one of highest priority
(``plevel``; the first registered on a tie), and otherwise raises
:class:`LoweringError` naming the op, the node, the target and, per
implementation, why it did not apply. Auto-tuning (direct vs Winograd), CPU
intrinsics (fp32 vs VNNI vs AMX) and accelerator coverage add entries here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from compiler.codegen.llvm.target import Target
from compiler.graph import Node, Op

from .master import MasterKind
from .space import Config, ConfigSpace
from vta_hw.errors import VtaError


class LoweringError(VtaError, ValueError):
    """A fused group uses an operator or attribute that no implementation lowers."""


@dataclass(frozen=True)
class Workload:
    """One op to lower.

    Attributes:
        node: the op's node in the fused group's body.
        target: the LLVM target the kernel is built for.
        constants: the body's inputs that graph constants feed (packable at compile time).
    """

    node: Node
    target: Target
    constants: tuple[Node, ...] = ()

    def is_const(self, src: Node) -> bool:
        """Whether ``src`` is a body input fed by a graph constant."""
        return any(src is c for c in self.constants)


Check = Callable[[Workload], "str | None"]   # None where it holds, else why not


def _no_knobs(w: Workload) -> ConfigSpace:
    return ConfigSpace()


def _no_packs(w: Workload, cfg: Config) -> dict:
    return {}


@dataclass(frozen=True)
class Implementation:
    """One way to lower one op.

    Attributes:
        op: the graph op.
        name: unique among the op's implementations, e.g. ``"conv2d_nchw"``.
        compute: ``compute(b, node, args, cfg) -> (value, acc)``: declares the op's
            stages on the builder ``b`` from its inputs ``args`` (``Lazy`` s) and returns
            its value (a ``Lazy``) and, for a master, the te tensor it accumulates into
            (None for injective ops).
        kind: the master kind it declares; None for injective ops.
        schedule: ``schedule(s, acc, out, cfg)``, the template that schedules ``acc``
            and the stage ``out`` storing it (masters only).
        space: ``space(workload) -> ConfigSpace``, the knobs of the template for this
            workload; its default point is today's hand-picked schedule.
        packs: ``packs(workload, cfg) -> {src index: packing tag}``: inputs to pass
            pre-packed (``packing.pack_param``) where a constant feeds them.
        when: conditions, each ``check(workload) -> None | why not``.
        plevel: priority among the applicable implementations (higher wins).
    """

    op: Op
    name: str
    compute: Callable
    kind: "MasterKind | None" = None
    schedule: "Callable | None" = None
    space: Callable[[Workload], ConfigSpace] = _no_knobs
    packs: Callable[[Workload, Config], dict] = _no_packs
    when: tuple = ()
    plevel: int = 10

    def why_not(self, w: Workload) -> list[str]:
        """The reasons this implementation does not apply to ``w`` (empty: it applies)."""
        return [r for r in (check(w) for check in self.when) if r]


@dataclass
class Registry:
    """Op -> its implementations, in registration order."""

    impls: dict = field(default_factory=dict)

    def add(self, impl: Implementation) -> Implementation:
        """Register ``impl``. Raises ValueError if its op already has one of that name."""
        siblings = self.impls.setdefault(impl.op, [])
        if any(i.name == impl.name for i in siblings):
            raise ValueError(f"{impl.op.name} already has an implementation named {impl.name!r}")
        siblings.append(impl)
        return impl

    def register(self, op: Op, name: str, **fields) -> Callable:
        """Decorator over a compute function: ``@registry.register(Op.X, "x_impl", kind=...,
        schedule=..., space=..., packs=..., when=(...), plevel=...)`` (fields as
        :class:`Implementation`). Returns the function unchanged."""
        def deco(compute):
            self.add(Implementation(op, name, compute, **fields))
            return compute
        return deco

    def implementations(self, op: Op) -> tuple:
        """The implementations of ``op``, in registration order (empty if none)."""
        return tuple(self.impls.get(op, ()))

    def select(self, w: Workload) -> Implementation:
        """The applicable implementation of highest ``plevel`` (first registered on a tie).

        Raises:
            LoweringError: the op has no implementation, or none applies (the message
                gives each implementation's reasons).
        """
        op, n = w.node.op, w.node
        where = f"node {n.label!r}" if n.label else f"node {n!r}"
        impls = self.implementations(op)
        if not impls:
            raise LoweringError(f"operator {op.name} has no CPU lowering ({where}); register an "
                                "implementation in compiler/graph_lower/impls/")
        best, reasons = None, []
        for impl in impls:
            why = impl.why_not(w)
            if why:
                reasons.append(f"{impl.name}: {'; '.join(why)}")
            elif best is None or impl.plevel > best.plevel:
                best = impl
        if best is None:
            raise LoweringError(f"no implementation of {op.name} applies to {where} on target "
                                f"{w.target}: " + " | ".join(reasons))
        return best


REGISTRY = Registry()
register = REGISTRY.register


def default_registry() -> Registry:
    """The registry with every implementation of ``compiler/graph_lower/impls/`` registered."""
    from . import impls  # noqa: F401  (registers them on import)
    return REGISTRY


# ------------------------------------------------------------------ conditions
def attr_is(name: str, value, default=None) -> Check:
    """Holds where the node's attribute ``name`` (``default`` if absent) equals ``value``."""
    def check(w: Workload):
        got = w.node.attr(name, default)
        return None if got == value else f"{name} is {got!r}, needs {value!r}"
    return check


def target_arch(*archs: str) -> Check:
    """Holds where the target's architecture (``x86_64``, ``aarch64``, ...) is one of ``archs``."""
    def check(w: Workload):
        arch = w.target.arch
        return None if arch in archs else f"target architecture {arch} is not one of {list(archs)}"
    return check


def cpu_features(*features: str) -> Check:
    """Holds where the target has every LLVM feature in ``features`` (e.g. ``"+avx512vnni"``)."""
    def check(w: Workload):
        have = set(w.target.features.split(","))
        missing = [f for f in features if f not in have]
        return f"target lacks {', '.join(missing)}" if missing else None
    return check
