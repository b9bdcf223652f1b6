"""Schedules: a `Stage` per compute operation with its loop transformations.

A stage starts with one loop per output axis then per reduce axis (the root
axes). `split`/`fuse` record relations between axes and edit the ordered list of
leaf axes (the loops that lowering emits, outermost first); the other primitives
annotate leaf axes or the stage. A primitive that cannot apply raises
`ScheduleError` naming the stage, the axis and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tir import ir
from ..tir.ops import ForKind, Op
from ..tir.visit import rewrite_expr
from .tensor import ComputeOp, IterVar, PlaceholderOp, Tensor
from vta_hw.errors import VtaError


class ScheduleError(VtaError, ValueError):
    """A schedule primitive that cannot apply to the given stage or axis."""


@dataclass(frozen=True)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass
class IterAttr:
    """What a leaf axis's loop becomes: loop kind, thread binding, pragmas, tensor intrinsic."""

    kind: ForKind = ForKind.SERIAL
    thread: str | None = None
    pragmas: list = field(default_factory=list)
    tensor_intrin: object = None


class Stage:
    """The schedule of one compute operation (see module docstring)."""

    def __init__(self, op: ComputeOp, schedule: Schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        self._reset_axes()
        self.attach = "root"                 # "root" | "inline" | "scope"
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope = "global"
        self.storage_aligns: list[tuple[int, int, int]] = []

    def _reset_axes(self):
        self.leaf_iter_vars: list[IterVar] = [*self.op.axis, *self.op.reduce_axis]
        self.relations: list[Split | Fuse] = []
        self.iter_attrs: dict[IterVar, IterAttr] = {}

    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self) -> str:
        return f"Stage({self.name}: {', '.join(iv.name for iv in self.leaf_iter_vars)})"

    # -------------------------------------------------------- checks

    def _leaf(self, iv, primitive: str) -> IterVar:
        if not isinstance(iv, IterVar):
            raise ScheduleError(f"{primitive}: expected an IterVar (loop) of stage {self.name!r}, not "
                                f"{iv!r}; pass one of s[{self.name}].op.axis, op.reduce_axis or "
                                "an axis returned by split/fuse")
        if iv not in self.leaf_iter_vars:
            leaves = ", ".join(x.name for x in self.leaf_iter_vars)
            raise ScheduleError(
                f"{primitive}: axis {iv.name!r} is not a loop of stage {self.name!r} (its loops: "
                f"{leaves}); use an axis of this stage's op or one returned by split/fuse on it")
        return iv

    def _attr(self, iv: IterVar) -> IterAttr:
        return self.iter_attrs.setdefault(iv, IterAttr())

    def is_reduce_axis(self, iv: IterVar) -> bool:
        """Whether `iv` is or derives from a reduce axis."""
        if iv.kind == "reduce":
            return True
        for rel in self.relations:
            if isinstance(rel, Split) and iv in (rel.outer, rel.inner):
                return self.is_reduce_axis(rel.parent)
            if isinstance(rel, Fuse) and iv is rel.fused:
                return self.is_reduce_axis(rel.outer)
        return False

    # -------------------------------------------------------- loop structure

    def split(self, iv: IterVar, factor: int | None = None, nparts: int | None = None):
        """Split loop `iv` into (outer, inner) with inner extent `factor` or outer extent `nparts`.

        When the extent is not a multiple, lowering guards the body with the original bound.
        Raises ScheduleError for a non-leaf axis or a factor that is not a positive int.
        """
        self._leaf(iv, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split of {iv.name!r} in stage {self.name!r}: give exactly one of "
                                f"factor= or nparts=, not factor={factor!r}, nparts={nparts!r}")
        n = factor if factor is not None else nparts
        if not isinstance(n, int) or n < 1:
            raise ScheduleError(f"split of {iv.name!r} in stage {self.name!r}: factor/nparts must "
                                f"be a positive int, not {n!r}")
        kind = "reduce" if self.is_reduce_axis(iv) else "data_par"
        outer = IterVar(ir.var(f"{iv.name}.outer"), None, kind)
        inner = IterVar(ir.var(f"{iv.name}.inner"), None, kind)
        self.relations.append(Split(iv, outer, inner, factor, nparts))
        pos = self.leaf_iter_vars.index(iv)
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        return outer, inner

    def fuse(self, *ivs: IterVar) -> IterVar:
        """Fuse adjacent loops (outermost first) into one loop; returns the fused axis.

        Raises ScheduleError when the axes are not adjacent in loop order, or mix
        data-parallel and reduce axes.
        """
        if len(ivs) < 2:
            raise ScheduleError(f"fuse in stage {self.name!r}: give at least two axes, not "
                                f"{len(ivs)} ({', '.join(getattr(iv, 'name', str(iv)) for iv in ivs)})")
        for iv in ivs:
            self._leaf(iv, "fuse")
        pos = [self.leaf_iter_vars.index(iv) for iv in ivs]
        if pos != list(range(pos[0], pos[0] + len(ivs))):
            order = ", ".join(x.name for x in self.leaf_iter_vars)
            raise ScheduleError(f"fuse: axes {', '.join(iv.name for iv in ivs)} of stage "
                                f"{self.name!r} are not adjacent in loop order ({order}); reorder "
                                "them first")
        kinds = {self.is_reduce_axis(iv) for iv in ivs}
        if len(kinds) > 1:
            raise ScheduleError(f"fuse: stage {self.name!r} cannot fuse data-parallel and reduce "
                                f"axes ({', '.join(iv.name for iv in ivs)}); fuse only data-parallel "
                                "axes or only reduce axes")
        acc = ivs[0]
        for nxt in ivs[1:]:
            fused = IterVar(ir.var(f"{acc.name}.{nxt.name}.fused"), None,
                            "reduce" if kinds == {True} else "data_par")
            self.relations.append(Fuse(acc, nxt, fused))
            p = self.leaf_iter_vars.index(acc)
            self.leaf_iter_vars[p:p + 2] = [fused]
            acc = fused
        return acc

    def reorder(self, *ivs: IterVar) -> None:
        """Put the given loops in this order, in the slots they occupy now."""
        for iv in ivs:
            self._leaf(iv, "reorder")
        if len(set(map(id, ivs))) != len(ivs):
            raise ScheduleError(f"reorder in stage {self.name!r}: an axis is given twice "
                                f"({', '.join(iv.name for iv in ivs)}); give each axis once")
        slots = sorted(self.leaf_iter_vars.index(iv) for iv in ivs)
        for slot, iv in zip(slots, ivs):
            self.leaf_iter_vars[slot] = iv

    def tile(self, x: IterVar, y: IterVar, x_factor: int, y_factor: int):
        """Split x and y and order the loops (x.outer, y.outer, x.inner, y.inner); returns them."""
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    # -------------------------------------------------------- loop annotations

    def _kind(self, iv: IterVar, kind: ForKind, primitive: str) -> None:
        self._leaf(iv, primitive)
        if kind is ForKind.PARALLEL and self.is_reduce_axis(iv):
            raise ScheduleError(f"parallel: axis {iv.name!r} of stage {self.name!r} is a reduction "
                                "axis; parallelize a data-parallel axis")
        self._attr(iv).kind = kind

    def unroll(self, iv: IterVar) -> None:
        """Copy the loop body once per iteration (needs a constant extent at lowering)."""
        self._kind(iv, ForKind.UNROLLED, "unroll")

    def vectorize(self, iv: IterVar) -> None:
        """Run the loop's iterations as SIMD lanes (serial when the body does not allow it)."""
        self._kind(iv, ForKind.VECTORIZED, "vectorize")

    def parallel(self, iv: IterVar) -> None:
        """Run the loop's iterations on CPU threads."""
        self._kind(iv, ForKind.PARALLEL, "parallel")

    def bind(self, iv: IterVar, thread: IterVar) -> None:
        """Bind a loop to a thread axis from `thread_axis` (GPU axis or "vthread")."""
        self._leaf(iv, "bind")
        if not isinstance(thread, IterVar) or thread.kind not in ("thread", "vthread"):
            raise ScheduleError(f"bind: axis {iv.name!r} of stage {self.name!r} must be bound to a "
                                f"thread_axis(...), not {thread!r}")
        self._attr(iv).thread = thread.name

    def pragma(self, iv: IterVar, key: str, value=True) -> None:
        """Annotate the loop with AttrStmt("pragma_<key>", value) around it."""
        self._leaf(iv, "pragma")
        self._attr(iv).pragmas.append((key, value))

    def tensorize(self, iv: IterVar, intrin) -> None:
        """Replace the loops from `iv` inward by the tensor intrinsic `intrin` (see tensorize.py)."""
        self._leaf(iv, "tensorize")
        self._attr(iv).tensor_intrin = intrin

    # -------------------------------------------------------- placement and storage

    def compute_at(self, parent: Stage, iv: IterVar) -> None:
        """Compute this stage inside loop `iv` of stage `parent`, only the region it reads there.

        `parent` reads this stage directly or through other stages (as TVM-VTA's
        tutorials attach the GEMM and the ALU stages all at the output tile); then
        every stage in between must be computed at the same loop.

        Raises ScheduleError when `parent` does not read this stage's output, directly
        or through other stages, or `iv` is not a loop of `parent`.
        """
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at: stage {self.name!r} needs a Stage (s[tensor]) to attach "
                                f"to at axis {getattr(iv, 'name', iv)!r}, not {parent!r}; pass "
                                "s[consumer]")
        parent._leaf(iv, "compute_at")
        seen, todo = set(), [self]
        while todo:
            for r in self.schedule.readers(todo.pop()):
                if r not in seen:
                    seen.add(r)
                    todo.append(r)
        if parent not in seen:
            readers = [s.name for s in self.schedule.readers(self)] or ["none"]
            raise ScheduleError(f"compute_at: stage {parent.name!r} does not read {self.name!r}; "
                                f"attach {self.name!r} to a stage that reads it (readers: "
                                f"{', '.join(readers)}), not at axis {iv.name!r} of "
                                f"{parent.name!r}")
        self.attach, self.attach_stage, self.attach_ivar = "scope", parent, iv

    def compute_inline(self) -> None:
        """Substitute this stage's body into its readers; raises ScheduleError for a reduction
        or an output."""
        if self.op.reduce_axis:
            raise ScheduleError(f"compute_inline: stage {self.name!r} is a reduction (over axes "
                                f"{', '.join(a.name for a in self.op.reduce_axis)}); only elementwise "
                                "stages can be inlined: use compute_at")
        if self.origin_op in self.schedule.outputs:
            raise ScheduleError(f"compute_inline: stage {self.name!r} is an output of the schedule; "
                                "outputs stay at root: inline the stages it reads instead")
        self.attach, self.attach_stage, self.attach_ivar = "inline", None, None

    def compute_root(self) -> None:
        """Compute this stage in its own loop nest at the top of the function (the default)."""
        self.attach, self.attach_stage, self.attach_ivar = "root", None, None

    def set_scope(self, scope: str) -> None:
        """Store this stage's output in memory `scope` ("global", "local", "shared", SRAM scopes)."""
        self.scope = scope

    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        """Pad the stride of dimension `axis` so that stride % factor == offset (in elements)."""
        if axis not in self.op.axis:
            raise ScheduleError(f"storage_align: {getattr(axis, 'name', axis)!r} is not an output "
                                f"axis of stage {self.name!r} (axes: "
                                f"{', '.join(a.name for a in self.op.axis)})")
        if factor < 1 or not 0 <= offset < factor:
            raise ScheduleError(f"storage_align of axis {axis.name!r} in stage {self.name!r}: need "
                                f"factor >= 1 and 0 <= offset < factor, not factor={factor}, "
                                f"offset={offset}")
        self.storage_aligns.append((self.op.axis.index(axis), factor, offset))


class Schedule:
    """Stages of every compute op reachable from `outputs`, producers before consumers."""

    def __init__(self, outputs: list[Tensor]):
        self.outputs = [t.op for t in outputs]
        self.stages: list[Stage] = []
        self.stage_map: dict[ComputeOp, Stage] = {}
        seen: set = set()

        def visit(op):
            if id(op) in seen or isinstance(op, PlaceholderOp):
                return
            seen.add(id(op))
            for t in op.reads():
                visit(t.op)
            self._add(Stage(op, self), len(self.stages))

        for op in self.outputs:
            if not isinstance(op, ComputeOp):
                raise ScheduleError(f"create_schedule: output {op.name!r} is a placeholder; "
                                    "schedule computes")
            visit(op)

    def _add(self, stage: Stage, pos: int) -> None:
        self.stages.insert(pos, stage)
        self.stage_map[stage.origin_op] = stage

    def __getitem__(self, t: Tensor | ComputeOp) -> Stage:
        op = t.op if isinstance(t, Tensor) else t
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(f"placeholder {op.name!r} has no stage; only computes are scheduled")
        if op not in self.stage_map:
            raise ScheduleError(f"tensor {op.name!r} is not computed by this schedule")
        return self.stage_map[op]

    def readers(self, stage: Stage) -> list[Stage]:
        t = stage.origin_op.output
        return [s for s in self.stages if t in s.op.reads()]

    def cache_read(self, tensor: Tensor, scope: str, readers: list[Tensor]) -> Tensor:
        """A copy of `tensor` in memory `scope` that the `readers` read instead; returns it."""
        stages = [self[r] for r in readers]
        for st in stages:
            if tensor not in st.op.reads():
                raise ScheduleError(f"cache_read: stage {st.name!r} does not read {tensor.name!r}; "
                                    f"list only its readers ("
                                    f"{', '.join(r.name for r in self.stages if tensor in r.op.reads())})")
        cache = _copy_compute(tensor, f"{tensor.name}.{scope}")
        for st in stages:
            st.op = _replace_reads(st.op, {tensor: cache})
        first = min(self.stages.index(st) for st in stages)
        stage = Stage(cache.op, self)
        stage.scope = scope
        self._add(stage, first)
        return cache

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute `tensor` into a cache in `scope`, then copy it out; returns the cache.

        The stage of `tensor` becomes the copy (same axes); the cache stage gets the
        original body, including its reduce axes. Raises ScheduleError when the stage
        already has loop transformations.
        """
        stage = self[tensor]
        if stage.relations or stage.iter_attrs:
            raise ScheduleError(f"cache_write: stage {stage.name!r} already has loop "
                                "transformations; call cache_write before split/fuse/annotations")
        op = stage.op
        axis = tuple(IterVar(ir.var(f"{a.name}.c"), a.extent) for a in op.axis)
        body = rewrite_expr(op.body, lambda x: {a.var: b.var for a, b in zip(op.axis, axis)}.get(x))
        cache = ComputeOp(f"{op.name}.{scope}", axis, op.reduce_axis, body).output
        stage.op = ComputeOp(op.name, op.axis, (), cache[tuple(a.var for a in op.axis)])
        stage._reset_axes()
        new = Stage(cache.op, self)
        new.scope = scope
        self._add(new, self.stages.index(stage))
        return cache


def create_schedule(outputs: Tensor | list[Tensor]) -> Schedule:
    """A schedule computing `outputs` with default loop nests (one stage per compute)."""
    return Schedule([outputs] if isinstance(outputs, Tensor) else list(outputs))


def _copy_compute(tensor: Tensor, name: str) -> Tensor:
    axis = tuple(IterVar(ir.var(f"ax{d}"), n) for d, n in enumerate(tensor.shape))
    return ComputeOp(name, axis, (), tensor[tuple(a.var for a in axis)]).output


def _replace_reads(op: ComputeOp, mapping: dict[Tensor, Tensor]) -> ComputeOp:
    def fn(x):
        if x.op is Op.TENSOR_READ and x.arg in mapping:
            return ir.Expr(Op.TENSOR_READ, x.dtype, x.src, mapping[x.arg])
        return None
    return ComputeOp(op.name, op.axis, op.reduce_axis, rewrite_expr(op.body, fn))
