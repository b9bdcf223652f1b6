"""DMA copies: ``pragma_dma_copy`` loop nests -> 2-D LOAD/STORE instructions with padding.

A mixin of the VTA code generator (``compiler.codegen.vta``); see its module
docstring for the forms accepted. The SRAM side must be dense rows, the DRAM
side rows of contiguous elements at a fixed stride, and where a padding
condition is false (a ``select`` or an ``if``/``else`` of the value and zero)
the valid part must be a rectangle, whose surround becomes the LOAD's pad
fields. Where both sides' offsets and the condition's comparisons are affine
in the copy's two loops (``vta_affine``), bases and steps come from one
compiled function run at three points (``_dma_affine``); otherwise, and to
report every error, the copy nest is evaluated over its whole iteration grid
with numpy (``vta_eval``).
"""
from __future__ import annotations

import functools

import numpy as np

from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.topi.vta.environment import ACC_SCOPE, INP_SCOPE, SCOPE_MEM, WGT_SCOPE
from vta_hw.config import MEMOP_PAD_BITS, MEMOP_SIZE_BITS
from vta_hw.isa import Load, MemId, Store

from .affine import comparisons, interval, is_affine
from .eval import CodegenError, compiled_tuple, element_index, evaluate, flat_offset
from .tokens import Entry

_PAD_MAX = (1 << MEMOP_PAD_BITS) - 1
_SIZE_MAX = (1 << MEMOP_SIZE_BITS) - 1


@functools.lru_cache(maxsize=1 << 12)
def _axis(lo: int, n: int, axis: int) -> np.ndarray:
    """``lo .. lo+n-1`` shaped ``(n, 1)`` (axis 0, rows) or ``(1, n)``; read-only, shared."""
    a = (np.arange(n) + lo).reshape((n, 1) if axis == 0 else (1, n))
    a.flags.writeable = False
    return a


class DmaMixin:
    """DMA lowering; needs the generator's ``cfg``, ``env_``, ``layout``, ``dram``,
    ``sram``, ``entries`` and ``_root``."""

    def dma(self, s: ir.Stmt, env: dict) -> None:
        if isinstance(s, (ir.SeqStmt, ir.IfThenElse, ir.LetStmt)) or (
                isinstance(s, ir.AttrStmt) and s.key == "virtual_thread"):
            # control around copies: walk it, copies inside stay DMA
            if isinstance(s, ir.SeqStmt):
                for c in s.stmts:
                    self.dma(c, env)
            elif isinstance(s, ir.IfThenElse):
                branch = s.then_case if evaluate(s.cond, env) else s.else_case
                if branch is not None:
                    self.dma(branch, env)
            elif isinstance(s, ir.LetStmt):
                self.dma(s.body, {**env, s.var.name: int(evaluate(s.value, env))})
            else:
                self.dma(s.body, env)
            return
        hit = self._copies.get(id(s))
        if hit is None or hit[0] is not s:
            loops, leaf = _copy_nest(s)
            hit = self._copies[id(s)] = (s, loops, leaf,
                                         ", ".join(repr(f.var.name) for f in loops) or "none",
                                         [_const_extent(f) for f in loops])
        loops, leaf = list(hit[1]), hit[2]
        self._copy_loops = hit[3]
        if not isinstance(leaf, ir.Store):
            raise CodegenError(f"a dma_copy pragma must hold a loop nest around one Store, found "
                               f"{type(leaf).__name__} under loops ({self._copy_loops}): "
                               f"{leaf!r:.200}; put env.dma_copy on the outermost axis of a copy "
                               "stage (a cache_read, or a stage that only copies a tensor), with "
                               "no other stage computed inside it")
        elem = {}
        if dt.lanes(leaf.value.dtype) == 1:
            loops, elem = self._element_loops(loops, leaf, env)
        # loops of one iteration (a 1x1 kernel's kh, kw; one input-channel block) are bound
        # to their start, so the two innermost loops that move data make the 2-D rows: a
        # weight tile of ``toc`` output blocks is one LOAD of ``toc`` rows, not ``toc`` LOADs
        # (hit[4] is per loop of the nest; the element loops dropped above are its last)
        once = [o if o is not None else _one_iteration(f, env) for f, o in zip(loops, hit[4])]
        units = [f for f, o in zip(loops, once) if o]
        loops = [f for f, o in zip(loops, once) if not o]
        outer, inner = loops[:-2], loops[-2:]
        self._dma_outer(outer, inner, leaf, env, elem, units)

    def _element_loops(self, loops, st: ir.Store, env: dict):
        """A scalar copy (as te lowering writes it): the innermost loops must walk one
        element, value by value, on both sides; they are dropped (their variables 0)."""
        value = st.value
        while value.op in (Op.CAST, Op.SELECT):
            value = value.src[0] if value.op is Op.CAST else value.src[1]
        sram = st.buffer if st.buffer.scope != "global" else value.arg
        if sram.scope not in (INP_SCOPE, WGT_SCOPE, ACC_SCOPE) or value.op is not Op.LOAD:
            raise CodegenError(f"dma_copy on stage {st.buffer.name!r} (loops {self._copy_loops}): "
                               f"a copy must move a tensor between DRAM and an SRAM scope, not "
                               f"{st!r:.200}; put env.dma_copy only on copy stages (cache_read "
                               "into local.*_buffer, or the output copied from local.acc_buffer)")
        ev = self.env_.elem_values(sram.scope)
        k, prod = len(loops), 1
        while k > 0 and prod < ev:
            k -= 1
            prod *= int(evaluate(loops[k].extent, env))
        if prod != ev:
            raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) must end "
                               f"in loops over exactly one {ev}-value element of {sram.name!r}; "
                               f"theirs cover {prod}: keep the copy's innermost axes (the "
                               "element's rows and columns) whole and innermost")
        grid = {f.var.name: int(evaluate(f.min, env)) for f in loops[:k]}
        elem = {}
        shape = [int(evaluate(f.extent, env)) for f in loops[k:]]
        for j, f in enumerate(loops[k:]):
            sh = [1] * len(shape)
            sh[j] = shape[j]
            grid[f.var.name] = np.arange(shape[j]).reshape(sh)
            elem[f.var.name] = 0
        full = {**env, **grid}
        for buf, idx in ((st.buffer, st.indices), (value.arg, value.src)):
            off = np.broadcast_to(evaluate(flat_offset(buf, idx), full), shape).reshape(-1)
            if not np.array_equal(off, off[0] + np.arange(ev)):
                raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}): "
                                   f"the element loops must walk {buf.name!r} contiguously, value "
                                   "by value; do not reorder or split the copy's innermost axes")
        return loops[:k], elem

    def _dma_outer(self, outer, inner, st, env, elem=None, units=()):
        if outer:
            f, rest = outer[0], outer[1:]
            lo, n = _int(f.min, env), _int(f.extent, env)
            env, name = dict(env), f.var.name   # one copy per level, rebound per iteration
            for v in range(lo, lo + n):
                env[name] = v
                self._dma_outer(rest, inner, st, env, elem, units)
            return
        shape, names, axes = [], [], []
        at = {**env, **(elem or {})}    # the inner loops at their first iteration
        for f in units:   # outermost first: a start may read an enclosing loop's variable
            at[f.var.name] = _int(f.min, at)
        for axis, f in enumerate([None] * (2 - len(inner)) + list(inner)):
            if f is None:
                shape.append(1)
                names.append(None)
                continue
            names.append(f.var.name)
            lo, n = _int(f.min, env), _int(f.extent, env)
            shape.append(n)
            axes.append((f.var.name, lo, n, axis))
            at[f.var.name] = lo
        Y, X = shape
        if Y * X == 0:
            return
        self._dma_2d(st, lambda: {**at, **{v: _axis(lo, n, a) for v, lo, n, a in axes}},
                     Y, X, names, at)

    def _dma_2d(self, st: ir.Store, grid, Y: int, X: int, names, at: dict) -> None:
        """One LOAD/STORE of ``Y`` rows of ``X`` elements; ``grid()`` maps loop names to their
        values (arrays shaped ``(Y, 1)`` / ``(1, X)``), ``names`` the row and element loops,
        ``at`` the loop names to their first values (ints): where both sides' indices are
        affine in the two loops (``vta_affine``) three evaluations at ``at`` give them,
        else (and for every error) they are evaluated over the grid."""
        sides = self._sides.get(id(st))
        if sides is None or sides[0] is not st:
            sides = self._sides[id(st)] = (st, self._dma_sides(st))
        cond, sram_buf, sram_idx, dram_buf, dram_idx, load = sides[1]
        if self._root(sram_buf.name) not in self.sram:
            raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) uses SRAM "
                               f"buffer {sram_buf.name!r} outside its allocation; compute "
                               f"{sram_buf.name!r} at a loop around this copy")
        if self._dma_affine(st, sides[1], Y, X, names, at):
            return
        grid = grid()
        yy = np.arange(Y)[:, None]
        xx = np.arange(X)[None, :]
        ev = self.env_.elem_values(sram_buf.scope)
        s_idx = np.broadcast_to(element_index(sram_buf, sram_idx, ev, grid), (Y, X))
        d_idx = np.broadcast_to(element_index(dram_buf, dram_idx, ev, grid), (Y, X))
        valid = self._valid(cond, grid, Y, X)
        if Y == 1 and X > 1 and _strided_not_contiguous(d_idx[0]):
            # one loop whose DRAM side strides (a copy computed at a reduction loop: one
            # element of each row): rows of one element, y_size X, x_size 1, the stride
            s_idx, d_idx, (Y, X), names = s_idx.T, d_idx.T, (X, 1), names[::-1]
            valid = None if valid is None else valid.T
            yy, xx = np.arange(Y)[:, None], np.arange(X)[None, :]
        base = int(s_idx[0, 0])
        if not np.array_equal(s_idx, base + yy * X + xx):
            raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}): the SRAM "
                               f"side ({sram_buf.name!r}) must be dense rows of {X} elements; got "
                               f"indices {s_idx.tolist()!r:.120}; keep the copy's axes in the "
                               f"order of {sram_buf.name!r}'s dimensions (no reorder)")
        mem, spec = self._dram_spec(load, sram_buf, dram_buf)
        rect = self._rect(st, sram_buf, valid, Y, X)
        if rect is None:                # nothing valid: all rows are padding
            y0 = y1 = x0 = 0
            x1 = X
            pads = (Y, 0, 0, 0)
            dram_base, stride = self.layout.elem(spec, mem.name.lower()), X
        else:
            y0, y1, x0, x1 = rect
            pads = (y0, Y - y1, x0, X - x1)
            d = d_idx[y0:y1, x0:x1]
            stride = int(d[1, 0] - d[0, 0]) if y1 - y0 > 1 else x1 - x0
            ry = np.arange(y1 - y0)[:, None]
            rx = np.arange(x1 - x0)[None, :]
            if not np.array_equal(d, d[0, 0] + ry * stride + rx) or stride < 0:
                raise CodegenError(_dram_side_error(dram_buf.name, sram_buf.name, d, names))
            dram_base = self.layout.elem(spec, mem.name.lower()) + int(d[0, 0])
            if int(d.min()) < 0 or (int(d.max()) + 1) * ev > int(np.prod(dram_buf.shape)):
                raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) reads/"
                                   f"writes {dram_buf.name!r} out of bounds; use split factors "
                                   "that divide the extents")
        self._emit_dma(st, load, mem, sram_buf, base, dram_base, Y, X, (y0, y1, x0, x1),
                       stride, pads)

    def _dma_affine(self, st, sides, Y, X, names, at) -> bool:
        """``_dma_2d``'s work when both sides' flat offsets (and the padding condition's
        comparisons) are affine in the copy's two loops (``vta_affine``): their base and
        steps from evaluations at three points instead of arrays over the grid. Returns
        False, having emitted nothing, where they are not or a check fails (``_dma_2d``
        then evaluates them over the grid and says why)."""
        cond, sram_buf, sram_idx, dram_buf, dram_idx, load = sides
        form = self._affine_forms.get(id(st))
        if form is None or form[0] is not st:
            form = self._affine_forms[id(st)] = (st,) + self._affine_form(sides, names)
        _, fn, atoms, n_values, (mem, spec, base0) = form
        if fn is None:
            return False
        ny, nx = names
        v0 = vy = vx = fn(at)
        if Y > 1:                       # ``at`` is the caller's own: step it and restore
            at[ny] += 1
            vy = fn(at)
            at[ny] -= 1
        if X > 1:
            at[nx] += 1
            vx = fn(at)
            at[nx] -= 1
        steps = [(int(a), int(b) - int(a), int(c) - int(a)) for a, b, c in zip(v0, vy, vx)]
        ev = self.env_.elem_values(sram_buf.scope)
        s, d = steps[0], steps[1]
        k = 2
        if any(v % ev for v in s + d):
            return False
        (sb, sy, sx), (db, dy, dx) = ((v // ev for v in s), (v // ev for v in d))
        rect = (0, Y, 0, X)
        for sign, shift in atoms:            # the padding condition: a rectangle
            (a0, ay, ax), (b0, by, bx) = steps[k], steps[k + 1]
            k += 2
            gy, gx, value = sign * (ay - by), sign * (ax - bx), sign * (a0 - b0) + shift
            if gy and gx:
                return False
            y0, y1, x0, x1 = rect
            if gx:
                lo, hi = interval(gx, value, X)
                rect = (y0, y1, max(x0, lo), min(x1, hi))
            else:
                lo, hi = interval(gy, value, Y)
                rect = (max(y0, lo), min(y1, hi), x0, x1)
        if rect[0] >= rect[1] or rect[2] >= rect[3]:
            rect = None                 # nothing valid: all rows are padding
        if Y == 1 and X > 1 and dx > 1:   # as _dma_2d: rows of one element
            Y, X, sy, dy = X, 1, sx, dx
            rect = None if rect is None else (rect[2], rect[3], 0, 1)
        if not ((Y == 1 or sy == X) and (X == 1 or sx == 1)):
            return False
        if mem is None:                 # the DRAM buffer is not aligned: _dma_2d says so
            return False
        if rect is None:
            y0 = y1 = x0 = 0
            x1 = X
            pads = (Y, 0, 0, 0)
            dram_base, stride = base0, X
        else:
            y0, y1, x0, x1 = rect
            pads = (y0, Y - y1, x0, X - x1)
            h, w = y1 - y0, x1 - x0
            d00 = db + dy * y0 + dx * x0
            stride = dy if h > 1 else w
            if (w > 1 and dx != 1) or stride < 0:
                return False
            last = d00 + (dy * (h - 1) if h > 1 else 0) + (w - 1)
            if d00 < 0 or (last + 1) * ev > n_values:
                return False
            dram_base = base0 + d00
        self._emit_dma(st, load, mem, sram_buf, sb, dram_base, Y, X, (y0, y1, x0, x1),
                       stride, pads)
        return True

    def _affine_form(self, sides, names) -> tuple:
        """What ``_dma_affine`` needs of a copy, once per statement: ``(function of env
        giving the values of the two offsets and of the comparisons' operands (None: not
        affine), each comparison's (sign, shift), the DRAM buffer's values, (memory id,
        DRAM spec, its base element) or Nones where the DRAM buffer is misaligned)``."""
        cond, sram_buf, sram_idx, dram_buf, dram_idx, load = sides
        inner = frozenset(n for n in names if n is not None)
        offs = (flat_offset(sram_buf, tuple(sram_idx)), flat_offset(dram_buf, tuple(dram_idx)))
        atoms = () if cond is None else comparisons(cond, inner)
        try:
            mem, spec = self._dram_spec(load, sram_buf, dram_buf)
            where = (mem, spec, self.layout.elem(spec, mem.name.lower()))
        except (CodegenError, KeyError):  # _dma_2d reports it where the grid path would
            where = (None, None, None)
        n_values = int(np.prod(dram_buf.shape))
        if not all(is_affine(o, inner) for o in offs) or atoms is None:
            return None, (), n_values, where
        exprs = list(offs) + [x for _, _, a, b in atoms for x in (a, b)]
        return (compiled_tuple(tuple(exprs)), tuple((sign, shift) for sign, shift, _, _ in atoms),
                n_values, where)

    def _dma_sides(self, st: ir.Store) -> tuple:
        """``(cond, sram buffer, sram indices, dram buffer, dram indices, is_load)`` of a
        copy's Store (``cond`` the padding condition or None).

        Raises:
            CodegenError: the Store is no copy between DRAM and an SRAM (message says why).
        """
        value, cond = st.value, None
        while value.op is Op.CAST:
            value = value.src[0]
        if value.op is Op.SELECT:
            cond, value, other = value.src
            while other.op in (Op.CAST, Op.BROADCAST):
                other = other.src[0]
            if not (other.op is Op.CONST and other.arg == 0):
                raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) pads "
                                   f"with {other}; the LOAD pads with 0 only: write the padding "
                                   "as te.if_then_else(cond, x, 0)")
            while value.op is Op.CAST:
                value = value.src[0]
        if value.op is not Op.LOAD:
            raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) computes "
                               f"{value!r:.200}, not a copy; a DMA moves values as they are: "
                               "compute in another stage (env.alu or tensorize) and copy that")
        dst, src = st.buffer, value.arg
        if dst.scope != "global" and src.scope == "global":
            return cond, dst, st.indices, src, value.src, True
        if dst.scope == "global" and src.scope == ACC_SCOPE:
            if cond is not None:
                raise CodegenError(f"copy stage {dst.name!r} (loops {self._copy_loops}): a STORE "
                                   "cannot pad; drop the select")
            return cond, src, value.src, dst, st.indices, False
        raise CodegenError(f"copy stage {dst.name!r} (loops {self._copy_loops}) copies from "
                           f"{src.name!r} ({src.scope}) to {dst.name!r} ({dst.scope}); VTA "
                           "moves DRAM->INP/WGT/ACC SRAM and ACC(OUT)->DRAM: set the scopes "
                           "so each copy has one side in DRAM")

    @staticmethod
    def _valid(cond, grid: dict, Y: int, X: int):
        """Where the padding condition holds (bool, Y x X), or None where it always does."""
        if cond is None:
            return None
        valid = np.broadcast_to(np.asarray(evaluate(cond, grid), bool), (Y, X))
        return None if valid.all() else valid

    def _dram_spec(self, load: bool, sram_buf, dram_buf):
        """``(memory id, DRAM buffer spec)`` of a copy.

        Raises:
            CodegenError: the DRAM buffer is not aligned to the memory's elements.
        """
        mem = SCOPE_MEM[sram_buf.scope] if load else MemId.OUT
        spec = self.dram[dram_buf.name]
        eb = self.cfg.elem_bytes(mem.name.lower())
        if spec.offset % eb:
            raise CodegenError(f"DRAM buffer {dram_buf.name!r} is not aligned to {eb}-byte elements")
        return mem, spec

    def _rect(self, st, sram_buf, valid, Y: int, X: int):
        """The valid rectangle ``(y0, y1, x0, x1)`` of a copy, None if nothing is valid."""
        if valid is None:               # no padding: the whole copy is the rectangle
            return 0, Y, 0, X
        return _valid_rect(valid, f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) "
                           f"into {sram_buf.name!r}")

    def _emit_dma(self, st, load, mem, sram_buf, base, dram_base, Y, X, rect, stride,
                  pads) -> None:
        """Append the LOAD/STORE: ``base`` the SRAM element within the buffer, ``rect``
        ``(y0, y1, x0, x1)`` the part moved, the rest ``pads``.

        A copy that is all padding (``pads == (Y, 0, 0, 0)``) of more than ``_PAD_MAX``
        rows becomes one LOAD of zero rows per ``_PAD_MAX`` rows (a tile whose input rows
        all lie in the padding, e.g. a kernel row of a 3x3 conv over a 1x1 input, with more
        channel blocks than the field holds).

        Raises:
            CodegenError: a pad wider than its field.
        """
        y0, y1, x0, x1 = rect
        if load and pads == (Y, 0, 0, 0) and Y > _PAD_MAX:
            for row in range(0, Y, _PAD_MAX):
                n = min(_PAD_MAX, Y - row)
                self._emit_dma(st, load, mem, sram_buf, base + row * X, dram_base, n, X,
                               (0, 0, 0, X), stride, (n, 0, 0, 0))
            return
        if max(pads) > _PAD_MAX:
            raise CodegenError(f"copy stage {st.buffer.name!r} (loops {self._copy_loops}) needs pads "
                               f"{pads}; each pad field holds at most {_PAD_MAX} (reduce the "
                               "padding or tile it)")
        root = self._root(sram_buf.name)
        sram_base = self.sram[root] + base
        if stride == x1 - x0 == X and not any(pads) and 1 < Y * X <= _SIZE_MAX:
            # rows back to back in DRAM (and dense in SRAM): one row, so the memory port
            # moves it in long bursts instead of one burst, and one latency, per row
            X, Y, x1, y1, stride = Y * X, 1, Y * X, 1, Y * X
            x0 = y0 = 0
        if load:
            insn = Load(mem=mem, sram_base=sram_base, dram_base=dram_base, y_size=y1 - y0,
                        x_size=x1 - x0, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1],
                        x_pad_0=pads[2], x_pad_1=pads[3])
            self.entries.append(Entry(insn, writes=frozenset({root})))
        else:
            insn = Store(mem=MemId.OUT, sram_base=sram_base, dram_base=dram_base, y_size=Y,
                         x_size=X, x_stride=stride)
            self.entries.append(Entry(insn, reads=frozenset({root})))

    # ------------------------------------------------------------------ GEMM / ALU kernels


def _int(e: ir.Expr, env: dict) -> int:
    """The value of integer expression ``e`` (a loop bound) under ``env``."""
    return int(e.arg) if e.op is Op.CONST else int(evaluate(e, env))


def _copy_nest(s: ir.Stmt) -> tuple[tuple, ir.Stmt]:
    """The loops of copy nest ``s`` and its leaf, a padded copy written as te lowers
    ``if_then_else`` (the same element, a value or zero) turned into one Store of a
    ``select``."""
    loops, leaf = [], s
    while isinstance(leaf, ir.For):
        loops.append(leaf)
        leaf = leaf.body
    if (isinstance(leaf, ir.IfThenElse) and isinstance(leaf.then_case, ir.Store)
            and isinstance(leaf.else_case, ir.Store)
            and leaf.then_case.buffer == leaf.else_case.buffer
            and leaf.then_case.indices == leaf.else_case.indices):
        t, e = leaf.then_case, leaf.else_case
        leaf = ir.Store(t.buffer, ir.Expr(Op.SELECT, t.value.dtype, (leaf.cond, t.value, e.value)),
                        t.indices)
    return tuple(loops), leaf


def _valid_rect(valid: np.ndarray, what: str) -> tuple[int, int, int, int] | None:
    """``(y0, y1, x0, x1)``: the rectangle of ``valid`` (bool, Y x X) holding its True
    elements, or None when there are none.

    Raises:
        CodegenError: the True elements do not form a rectangle.
    """
    rows, cols = np.flatnonzero(valid.any(axis=1)), np.flatnonzero(valid.any(axis=0))
    if rows.size == 0:
        return None
    y0, y1, x0, x1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    rect = np.zeros(valid.shape, bool)
    rect[y0:y1, x0:x1] = True
    if not np.array_equal(valid, rect):
        raise CodegenError(f"{what}: the valid part of the padded copy is not a rectangle; "
                           "pads can only surround it: pad in rows and columns of the two "
                           "innermost copy loops only")
    return y0, y1, x0, x1


def _const_extent(f: ir.For) -> bool | None:
    """Whether loop ``f`` runs once when its extent is a constant, else None
    (``_one_iteration`` decides under the loop's environment)."""
    return int(f.extent.arg) == 1 if f.extent.op is Op.CONST else None


def _one_iteration(f: ir.For, env: dict) -> bool:
    """Whether loop ``f`` runs once under ``env`` (False when its extent reads a loop
    variable that ``env`` does not bind yet, such as an enclosing copy loop's)."""
    try:
        return int(evaluate(f.extent, env)) == 1
    except (KeyError, CodegenError):
        return False


def _strided_not_contiguous(d: np.ndarray) -> bool:
    """DRAM element indices ``d`` (1-D) at one fixed stride > 1 (not contiguous)."""
    step = int(d[1] - d[0])
    return step > 1 and np.array_equal(d, d[0] + step * np.arange(d.size))


def _dram_side_error(dram: str, sram: str, d: np.ndarray, names) -> str:
    """The message for a DRAM side that is not rows of contiguous elements at one stride:
    it names the copy, the loop at fault, the steps it takes (DRAM elements) and the fix."""
    y, x = (n or "(none)" for n in names)
    x_steps = sorted({int(v) for v in np.diff(d, axis=1).ravel()}) if d.shape[1] > 1 else [1]
    y_steps = sorted({int(v) for v in np.diff(d[:, 0])}) if d.shape[0] > 1 else [0]
    wrong = []
    if x_steps != [1]:
        wrong.append(f"its element loop {x!r} steps {x_steps[:4]} elements in DRAM (must be 1)")
    if len(y_steps) > 1 or y_steps[0] < 0:
        wrong.append(f"its row loop {y!r} steps {y_steps[:4]} (must be one value >= 0)")
    return (f"DMA copy between {dram!r} (DRAM) and {sram!r}: a LOAD/STORE moves rows of "
            f"contiguous elements at one row stride, but {' and '.join(wrong)}; reorder or "
            f"split the copy's loops so the innermost walks consecutive elements of {dram!r} "
            f"and the one outside it a fixed stride, or compute the copy at a loop that leaves "
            f"one strided loop (rows of one element: x_size 1)")
