"""Lowering a schedule to a loop nest: inlining, bound inference, loop nests per stage.

`schedule_to_func(sch, args, name)` gives the PrimFunc before any pass: N-D
loads and stores, loops in leaf order with guards for splits that may overrun,
reductions as an init nest plus an update nest, attached stages allocated and
computed inside their consumer's loop, tensorized loops replaced by the
intrinsic's statements.

Bound inference: a stage computed at loop `iv` of consumer C computes the region
of its output that C reads while the loops of C inside `iv` run over their whole
range and the loops outside stay fixed; the region's start is symbolic in those
outer loop variables and its extent a constant (the upper bound when the exact
extent depends on them). Root stages compute their whole shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..te.schedule import Schedule, ScheduleError, Split, Stage
from ..te.tensor import REDUCERS, IterVar, PlaceholderOp, Tensor, identity, tensors_read
from ..te.tensorize import BufferView, Layout
from . import ir
from .bound_infer import box_cover
from .ops import ForKind, Op
from .simplify import simplify_expr
from .visit import rewrite_expr, substitute, uses_var, walk_expr


@dataclass
class Nest:
    """The loops of one stage: unique loop variables, constant extents, root axis values."""

    stage: Stage
    body: ir.Expr
    buffer: ir.Buffer
    origin: tuple[ir.Expr, ...]
    loop_var: dict = field(default_factory=dict)     # leaf IterVar -> VAR
    extent: dict = field(default_factory=dict)       # IterVar -> int
    value: dict = field(default_factory=dict)        # root IterVar -> Expr of loop vars
    guards: list = field(default_factory=list)       # (root IterVar, condition)


class Lowering:
    """One lowering: unique names, loop-variable ranges, the buffer and origin of each tensor
    (the region start of an attached stage), and the nest of each stage."""

    def __init__(self, sch: Schedule, args: list, name: str):
        self.sch = sch
        self.name = name
        self.names: set[str] = set()
        self.ranges: dict = {}
        self.buffers: dict[Tensor, ir.Buffer] = {}
        self.origins: dict[Tensor, tuple] = {}
        self.nests: dict[Stage, Nest] = {}
        self.attached: dict[tuple, list[Stage]] = {}   # (consumer, leaf axis) -> stages computed there
        self.stages = [s for s in sch.stages if s.attach != "inline"]
        self.bodies = self._inline()
        self.params = self._params(args)
        # loop variables named in program order, so producers keep the plain names
        self.loop_vars = {(st, iv): ir.var(self._unique(iv.name))
                          for st in self.stages for iv in st.leaf_iter_vars}

    # ------------------------------------------------------------ names, inputs

    def _unique(self, name: str) -> str:
        out, n = name, 1
        while out in self.names:
            out, n = f"{name}_{n}", n + 1
        self.names.add(out)
        return out

    def _params(self, args: list) -> list:
        params = []
        for a in args:
            if isinstance(a, Tensor):
                if not isinstance(a.op, PlaceholderOp) and self.sch[a].attach != "root":
                    how = "inlined" if self.sch[a].attach == "inline" else "attached to another stage"
                    raise ScheduleError(f"lower: argument {a.name!r} is {how}; an argument must be "
                                        "computed at root (compute_root)")
                buf = ir.Buffer(self._unique(a.name), a.dtype, a.shape)
                self.buffers[a] = buf
                self.origins[a] = (ir.const(0),) * a.ndim
                params.append(buf)
            elif isinstance(a, ir.Expr) and a.op is Op.VAR:
                self.names.add(a.name)
                params.append(a)
            else:
                raise TypeError(f"lower: arguments must be tensors or scalar variables, not {a!r}")
        for st in self.stages:
            for t in tensors_read(self.bodies[st]):
                if isinstance(t.op, PlaceholderOp) and t not in self.buffers:
                    raise ScheduleError(f"lower: stage {st.name!r} reads placeholder {t.name!r}, "
                                        "which is not in the arguments; add it to args")
        for op in self.sch.outputs:
            if op.output not in self.buffers:
                raise ScheduleError(f"lower: output {op.name!r} is not in the arguments; add it")
        return params

    def _inline(self) -> dict:
        bodies: dict = {}
        inlined: dict[Tensor, tuple] = {}
        for st in self.sch.stages:
            def fn(x):
                if x.op is Op.TENSOR_READ and x.arg in inlined:
                    axes, body = inlined[x.arg]
                    return substitute(body, dict(zip(axes, x.src)))
                return None
            body = rewrite_expr(st.op.body, fn)
            if st.attach == "inline":
                inlined[st.origin_op.output] = (tuple(a.var for a in st.op.axis), body)
            else:
                bodies[st] = body
        for st in self.stages:
            if st.attach == "scope" and st.attach_stage.attach == "inline":
                raise ScheduleError(f"compute_at: stage {st.name!r} is attached to axis "
                                    f"{st.attach_ivar.name!r} of {st.attach_stage.name!r}, which is "
                                    "inlined; attach it to a stage that is not inlined")
        return bodies

    # ------------------------------------------------------------ loop nests

    def _nest(self, st: Stage, region: list) -> Nest:
        """Loop variables and extents of `st` computing `region` [(start, extent)] of its output."""
        t = st.origin_op.output
        if t in self.buffers:
            buf = self.buffers[t]
        else:
            buf = ir.Buffer(self._unique(t.name), st.op.dtype, tuple(e for _, e in region),
                            _aligned_strides([e for _, e in region], st.storage_aligns), st.scope)
            self.buffers[t] = buf
            self.origins[t] = tuple(s for s, _ in region)
        nest = Nest(st, self.bodies[st], buf, self.origins[t])
        roots = [*st.op.axis, *st.op.reduce_axis]
        for iv, (_, e) in zip(st.op.axis, region):
            nest.extent[iv] = e
        for iv in st.op.reduce_axis:
            nest.extent[iv] = iv.extent
        for rel in st.relations:
            if isinstance(rel, Split):
                n = nest.extent[rel.parent]
                if rel.factor is not None:
                    nest.extent[rel.inner], nest.extent[rel.outer] = rel.factor, -(-n // rel.factor)
                else:
                    nest.extent[rel.outer], nest.extent[rel.inner] = rel.nparts, -(-n // rel.nparts)
            else:
                nest.extent[rel.fused] = nest.extent[rel.outer] * nest.extent[rel.inner]
        value = {}
        for iv in st.leaf_iter_vars:
            v = self.loop_vars[(st, iv)]
            nest.loop_var[iv] = value[iv] = v
            self.ranges[v] = (0, nest.extent[iv] - 1)
        for rel in reversed(st.relations):
            if isinstance(rel, Split):
                value[rel.parent] = value[rel.outer] * nest.extent[rel.inner] + value[rel.inner]
                if nest.extent[rel.outer] * nest.extent[rel.inner] > nest.extent[rel.parent]:
                    nest.guards.append((rel.parent, value[rel.parent] < nest.extent[rel.parent]))
            else:
                inner_ext = nest.extent[rel.inner]
                value[rel.outer] = value[rel.fused] // inner_ext
                value[rel.inner] = value[rel.fused] % inner_ext
        for iv, (start, _), n in zip(st.op.axis, region, st.op.output.shape):
            v = simplify_expr(start + value[iv], self.ranges)
            nest.value[iv] = v
            if st.attach == "scope":
                nest.guards.append((iv, ir.logical_and(v >= 0, v < n)))
        for iv in st.op.reduce_axis:
            nest.value[iv] = simplify_expr(value[iv] + iv.min, self.ranges)
        guards = [(iv, simplify_expr(c, self.ranges)) for iv, c in nest.guards]
        nest.guards = [(iv, c) for iv, c in guards if not ir.is_const(c, True)]
        assert set(nest.value) == set(roots)
        return nest

    def _region(self, st: Stage) -> list:
        """[(start, extent)] of `st`'s output that must be computed (see module docstring)."""
        shape = st.op.output.shape
        if st.attach == "root":
            return [(ir.const(0), n) for n in shape]
        if st.origin_op in self.sch.outputs:
            raise ScheduleError(f"compute_at: stage {st.name!r} is an output, attached to axis "
                                f"{st.attach_ivar.name!r} of {st.attach_stage.name!r}; outputs are "
                                "computed at root: drop the compute_at")
        consumer = self.nests[st.attach_stage]
        t = st.origin_op.output
        # readers other than the consumer must be computed at that loop of it or inside it
        # (the consumer reads st through them); their whole nests read st there
        leaves = st.attach_stage.leaf_iter_vars
        inner = leaves[leaves.index(st.attach_ivar):] if st.attach_ivar in leaves else []
        between = [s for s in self.stages if s is not st.attach_stage and t in tensors_read(self.bodies[s])]
        stray = [s.name for s in between if s.attach != "scope" or s.attach_stage is not st.attach_stage
                 or s.attach_ivar not in inner]
        if stray:
            raise ScheduleError(f"compute_at: stage {st.name!r} is attached to axis "
                                f"{st.attach_ivar.name!r} of {st.attach_stage.name!r} but also read "
                                f"by {', '.join(stray)}, which is not computed at that axis "
                                "or inside it; compute it at root, cache_read it per reader, or "
                                "compute every reader at that axis")
        if st.attach_ivar not in leaves:
            raise ScheduleError(f"compute_at: stage {st.name!r} is attached to axis "
                                f"{st.attach_ivar.name!r} of {st.attach_stage.name!r}, which was split "
                                "or fused afterwards; attach it to one of the new axes")
        pos = leaves.index(st.attach_ivar)
        inside = [iv.name for iv in leaves[:pos + 1] if _intrin(st.attach_stage, iv)]
        if inside:
            raise ScheduleError(f"compute_at: stage {st.name!r} is attached to axis "
                                f"{st.attach_ivar.name!r} of {st.attach_stage.name!r}, inside the loops "
                                f"tensorized at {inside[0]!r}; attach it outside them")
        relax = {consumer.loop_var[iv]: (ir.const(0), ir.const(consumer.extent[iv] - 1))
                 for iv in leaves[pos + 1:]}
        if st.scope == "shared":
            relax.update(self._block_threads(st.attach_stage, leaves[:pos + 1]))
        root_map = {iv.var: consumer.value[iv] for iv in consumer.value}
        reads = [tuple(substitute(i, root_map) for i in x.src)
                 for x in walk_expr(consumer.body) if x.op is Op.TENSOR_READ and x.arg is t]
        for r in between:
            nest = self.nests[r]
            relax.update({nest.loop_var[iv]: (ir.const(0), ir.const(nest.extent[iv] - 1))
                          for iv in r.leaf_iter_vars})
            r_map = {iv.var: nest.value[iv] for iv in nest.value}
            reads += [tuple(substitute(i, r_map) for i in x.src)
                      for x in walk_expr(nest.body) if x.op is Op.TENSOR_READ and x.arg is t]
        return self._cover(reads, relax, st, shape)

    def _block_threads(self, stage: Stage, outer: list) -> dict:
        """The loops bound to threadIdx.* among ``outer`` (loops of ``stage`` enclosing an
        attach point) and the enclosing loops of the stages ``stage`` is computed at, each
        over its whole range: a "shared" stage holds what every thread of the block reads
        (as TVM relaxes thread axes for shared scope)."""
        relax = {}
        while True:
            nest = self.nests[stage]
            for iv in outer:
                attr = stage.iter_attrs.get(iv)
                if attr is not None and (attr.thread or "").startswith("threadIdx"):
                    relax[nest.loop_var[iv]] = (ir.const(0), ir.const(nest.extent[iv] - 1))
            if stage.attach != "scope":
                return relax
            leaves = stage.attach_stage.leaf_iter_vars
            outer = leaves[:leaves.index(stage.attach_ivar) + 1]
            stage = stage.attach_stage

    def _cover(self, reads: list, relax: dict, st: Stage, shape) -> list:
        """The box [(start, const extent)] covering index tuples `reads` with `relax`ed variables."""
        region = box_cover(reads, relax, self.ranges, shape)
        if isinstance(region, int):
            where = (f" computed at axis {st.attach_ivar.name!r} of {st.attach_stage.name!r}"
                     if st.attach == "scope" else "")
            raise ScheduleError(f"bound inference: cannot bound the indices of stage {st.name!r}"
                                f"{where} in dimension {region} "
                                f"({', '.join(str(r[region]) for r in reads)}); use affine "
                                "indices or compute the stage at root")
        return region

    # ------------------------------------------------------------ statements

    def _load(self, x: ir.Expr) -> ir.Expr | None:
        if x.op is not Op.TENSOR_READ:
            return None
        t = x.arg
        return ir.load(self.buffers[t], [simplify_expr(i - o, self.ranges)
                                         for i, o in zip(x.src, self.origins[t])])

    def _expr(self, nest: Nest, e: ir.Expr, mapping: dict | None = None) -> ir.Expr:
        m = {iv.var: v for iv, v in nest.value.items()}
        if mapping:
            m = {k: substitute(v, mapping) for k, v in m.items()}
        e = substitute(e, m)
        return simplify_expr(rewrite_expr(e, self._load), self.ranges)

    def _index(self, nest: Nest, mapping: dict | None = None) -> tuple[ir.Expr, ...]:
        """The index of the element the nest computes, relative to its buffer's origin."""
        return tuple(self._expr(nest, iv.var - o, mapping) for iv, o in zip(nest.stage.op.axis, nest.origin))

    def _store(self, nest: Nest, value: ir.Expr, idx: tuple) -> ir.Stmt:
        return _hoist_if_then_else(ir.Store(nest.buffer, value, idx))

    def _guard(self, nest: Nest, stmt: ir.Stmt, spatial_only: bool = False, mapping=None) -> ir.Stmt:
        conds = [substitute(c, mapping or {}) for iv, c in nest.guards
                 if not (spatial_only and iv.kind == "reduce")]
        return stmt if not conds else ir.IfThenElse(ir.logical_and(*conds), stmt)

    def _compute(self, nest: Nest) -> ir.Stmt:
        """The innermost statement of the update (or only) nest."""
        body = nest.body
        idx = self._index(nest)
        if body.op is not Op.REDUCE:
            return self._guard(nest, self._store(nest, self._expr(nest, body), idx))
        value = REDUCERS[body.arg[0]](ir.load(nest.buffer, idx), self._expr(nest, body.src[0]))
        stmt = self._store(nest, value, idx)
        cond = self._expr(nest, body.src[1])
        if not ir.is_const(cond, True):
            stmt = ir.IfThenElse(cond, stmt)
        return self._guard(nest, stmt)

    def _init(self, nest: Nest, pos: int) -> ir.Stmt:
        """The init nest of a reduction: the data-parallel loops from `pos` inward, fresh vars."""
        st = nest.stage
        leaves = [iv for iv in st.leaf_iter_vars[pos:] if not st.is_reduce_axis(iv)]
        mapping = {}
        for iv in leaves:
            v = ir.var(self._unique(f"{iv.name}.init"))
            mapping[nest.loop_var[iv]] = v
            self.ranges[v] = (0, nest.extent[iv] - 1)
        init = identity(nest.body.arg[0], nest.body.dtype)
        stmt = self._guard(nest, self._store(nest, init, self._index(nest, mapping)),
                           spatial_only=True, mapping=mapping)
        for iv in reversed(leaves):
            stmt = self._loop(st, iv, mapping[nest.loop_var[iv]], nest.extent[iv], stmt)
        return stmt

    def _loop(self, st: Stage, iv: IterVar, v: ir.Expr, ext: int, body: ir.Stmt) -> ir.Stmt:
        attr = st.iter_attrs.get(iv)
        kind = attr.kind if attr is not None else ForKind.SERIAL
        thread = attr.thread if attr is not None else None
        stmt: ir.Stmt = ir.For(v, ir.const(0), ir.const(ext), kind, body, thread)
        for key, value in reversed(attr.pragmas if attr is not None else []):
            stmt = ir.AttrStmt(f"pragma_{key}", value, stmt)
        return stmt

    def _tensorize(self, nest: Nest, pos: int, intrin) -> ir.Stmt:
        st = nest.stage
        leaves = st.leaf_iter_vars
        axis_name = leaves[pos].name
        relax = {nest.loop_var[iv]: (ir.const(0), ir.const(nest.extent[iv] - 1)) for iv in leaves[pos:]}

        def view(t: Tensor, reads: list, want: tuple, role: str, key: str) -> BufferView:
            region = self._cover(reads, relax, st, t.shape)
            exts = tuple(e for _, e in region)
            lead = len(exts) - len(want)
            if lead < 0 or exts[lead:] != tuple(want) or any(e != 1 for e in exts[:lead]):
                raise ScheduleError(f"tensorize: in stage {st.name!r} at axis {axis_name!r} the inner "
                                    f"loops cover a {exts} region of {role} {t.name!r}, but intrinsic "
                                    f"{intrin.name!r} expects {tuple(want)}; split the loops so the "
                                    "inner ones match the intrinsic")
            buf = self.buffers[t]
            layout = intrin.layouts.get(key, Layout())
            if layout.scope is not None and buf.scope != layout.scope:
                raise ScheduleError(f"tensorize: in stage {st.name!r} at axis {axis_name!r}, "
                                    f"intrinsic {intrin.name!r} needs {t.name!r} in scope "
                                    f"{layout.scope!r}, but it is in {buf.scope!r}; cache it into "
                                    f"{layout.scope!r} (cache_read or set_scope)")
            start = tuple(simplify_expr(lo - o, self.ranges) for (lo, _), o in zip(region, self.origins[t]))
            view = BufferView(buf, start, tuple(want))
            offset = simplify_expr(view.elem_offset, self.ranges)
            if not ir.is_const(simplify_expr(offset % layout.offset_factor, self.ranges), 0):
                raise ScheduleError(f"tensorize: in stage {st.name!r} at axis {axis_name!r}, operand "
                                    f"{key!r} of intrinsic {intrin.name!r} starts at element {offset} "
                                    f"of {buf.name!r}, not always a multiple of its offset_factor "
                                    f"{layout.offset_factor} (one whole {layout.scope or 'memory'} "
                                    f"element); split the loops over {t.name!r}'s inner dimensions "
                                    f"by multiples of their extents, tensorize at an axis whose inner "
                                    f"loops cover whole elements, or storage_align {buf.name!r}")
            return view

        ins_t = tensors_read(nest.body)
        if len(ins_t) != len(intrin.inputs):
            raise ScheduleError(f"tensorize: stage {st.name!r} at axis {axis_name!r} reads "
                                f"{len(ins_t)} tensors but intrinsic {intrin.name!r} reads "
                                f"{len(intrin.inputs)}; tensorize a stage that computes what the "
                                "intrinsic declares")
        red = nest.body.op is Op.REDUCE
        if (red != bool(intrin.op.reduce_axis)
                or red and (nest.body.arg[0] != intrin.op.body.arg[0] or not ir.is_const(nest.body.src[1], True))):
            raise ScheduleError(f"tensorize: stage {st.name!r} at axis {axis_name!r} and intrinsic "
                                f"{intrin.name!r} differ in reduction; make both the same reduction "
                                "without where=, or neither a reduction")
        checked = [c for _, c in nest.guards if any(uses_var(c, v) for v in relax)]
        if checked:
            raise ScheduleError(f"tensorize: the loops of stage {st.name!r} from axis {axis_name!r} inward "
                                f"need the boundary check {checked[0]}; use split factors that divide "
                                "the extents")
        ins = []
        for t, it in zip(ins_t, intrin.inputs):
            reads = [tuple(self._expr(nest, i) for i in x.src)
                     for x in walk_expr(nest.body) if x.op is Op.TENSOR_READ and x.arg is t]
            ins.append(view(t, reads, it.shape, "input", it.name))
        out_idx = tuple(nest.value[iv] for iv in st.op.axis)
        outs = [view(st.origin_op.output, [out_idx], intrin.op.shape, "output", intrin.op.name)]
        body, reset, update = intrin.statements(ins, outs)
        outer_red = [nest.loop_var[iv] for iv in leaves[:pos] if st.is_reduce_axis(iv)]
        if not outer_red:
            return self._guard(nest, ir.AttrStmt("tensorize", intrin.name, body))
        if reset is None:
            raise ScheduleError(f"tensorize: stage {st.name!r} keeps reduce loops outside axis "
                                f"{axis_name!r}, so intrinsic {intrin.name!r} must return "
                                "(body, reset, update); give it those, or tensorize at an axis "
                                "outside every reduce loop")
        first = ir.logical_and(*(ir.eq(v, 0) for v in outer_red))
        return self._guard(nest, ir.AttrStmt("tensorize", intrin.name,
                                             ir.seq(ir.IfThenElse(first, reset), update)))

    def emit(self, st: Stage) -> ir.Stmt:
        """The statements computing stage `st`, with the stages attached to its loops."""
        nest = self.nests[st]
        leaves = st.leaf_iter_vars
        red = nest.body.op is Op.REDUCE
        first_red = next((p for p, iv in enumerate(leaves) if st.is_reduce_axis(iv)), len(leaves))
        tensorized = next((p for p, iv in enumerate(leaves) if _intrin(st, iv)), None)

        def build(pos: int) -> ir.Stmt:
            if pos == tensorized:
                return self._tensorize(nest, pos, _intrin(st, leaves[pos]))
            if pos == len(leaves):
                return self._compute(nest)
            iv = leaves[pos]
            inner = build(pos + 1)
            if red and tensorized is None and pos + 1 == first_red:
                inner = ir.seq(self._init(nest, pos + 1), inner)
            for child in reversed(self.attached.get((st, iv), [])):
                inner = ir.Allocate(self.buffers[child.origin_op.output], ir.seq(self.emit(child), inner))
            return self._loop(st, iv, nest.loop_var[iv], nest.extent[iv], inner)

        stmt = build(0)
        if red and tensorized is None and first_red == 0:
            stmt = ir.seq(self._init(nest, 0), stmt)
        return stmt

    def run(self) -> ir.PrimFunc:
        for st in reversed(self.stages):
            self.nests[st] = self._nest(st, self._region(st))
        for st in self.stages:
            if st.attach == "scope":
                self.attached.setdefault((st.attach_stage, st.attach_ivar), []).append(st)
        roots = [st for st in self.stages if st.attach == "root"]
        body = ir.seq(*(self.emit(st) for st in roots))
        for st in reversed(roots):
            t = st.origin_op.output
            if self.buffers[t] not in self.params:
                body = ir.Allocate(self.buffers[t], body)
        return ir.PrimFunc(self.name, tuple(self.params), body)


def _intrin(st: Stage, iv: IterVar):
    """The tensor intrinsic that loop `iv` of `st` is tensorized with, or None."""
    attr = st.iter_attrs.get(iv)
    return None if attr is None else attr.tensor_intrin


def _aligned_strides(shape: list[int], aligns: list) -> tuple[int, ...]:
    """Row-major strides, with the stride of each aligned dimension padded so that
    stride % factor == offset (TVM storage_align)."""
    align = {d: (f, o) for d, f, o in aligns}
    strides = [1] * len(shape)
    acc = 1
    for d in range(len(shape) - 1, -1, -1):
        if d in align:
            f, o = align[d]
            acc += (o - acc) % f
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def _hoist_if_then_else(store: ir.Store) -> ir.Stmt:
    """Turn a lazy if_then_else in a stored value into IfThenElse statements."""
    for x in walk_expr(store.value):
        if x.op is Op.CALL and x.arg == "if_then_else":
            c, a, b = x.src
            then = _hoist_if_then_else(ir.Store(store.buffer, substitute(store.value, {x: a}), store.indices))
            other = _hoist_if_then_else(ir.Store(store.buffer, substitute(store.value, {x: b}), store.indices))
            return ir.IfThenElse(c, then, other)
    return store


def schedule_to_func(sch: Schedule, args: list, name: str) -> ir.PrimFunc:
    """The loop nest of schedule `sch` as a PrimFunc over `args` (tensors and scalar VARs)."""
    return Lowering(sch, args, name).run()
