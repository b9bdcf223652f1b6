"""VTA code generation: loop IR -> instruction stream + uops + DRAM layout (a ``Program``).

Input: a ``PrimFunc`` whose parameters are the DRAM buffers (scope
"global") and whose body uses the forms below; virtual-thread copies
(``AttrStmt("virtual_thread", k)``, from ``tir.passes.vthread``) with their
per-thread SRAM buffers (``name.vt<k>``) are welcome.

- ``For``, ``IfThenElse``, ``LetStmt``, ``SeqStmt`` outside the forms below
  are run at compile time: each iteration emits its own instructions.
- ``Allocate`` of a buffer in an SRAM scope (``compiler.topi.vta.environment``):
  a region of that SRAM, live in the body (a stack allocator per SRAM).
- ``AttrStmt("pragma_dma_copy")`` around copy loop nests ``dst[...] = src[...]``
  (optionally ``select(cond, src[...], 0)``, or ``if cond: dst = src else:
  dst = 0`` as te lowers ``if_then_else``) between a DRAM buffer and an SRAM
  buffer, whole elements at a time (vector loads, or scalar copies whose
  innermost loops walk exactly one element): the two innermost loops become one
  2-D LOAD/STORE (rows y, elements x; the SRAM side dense, the DRAM side
  contiguous in x with a row stride), outer loops give one DMA each. Where
  ``cond`` is false a LOAD writes zeros through its pad fields, so the valid
  part must be a rectangle and each pad at most 15.
- ``AttrStmt("pragma_uop_scope")`` around a loop nest with one tensor intrinsic
  (``AttrStmt("tensorize", "vta.gemm" | "vta.alu.<OP>")``, see
  ``compiler.topi.vta.intrin``) at its leaf: one GEMM/ALU instruction; the two
  innermost loops fold into ``iter_out``/``iter_in`` (``vta_uops.fold``), the
  others become uops. A tensorize statement outside a uop scope is a
  one-uop kernel. A GEMM reset under ``if cond`` (te's tensorize of a
  reduction) becomes a reset instruction over the iterations where ``cond``
  holds, ahead of the update.
- virtual-thread copies sunk inside a copy nest or an intrinsic are split back
  out: each thread's part becomes its own instructions, thread by thread.

Dependency tokens come from the buffers each instruction touches
(``vta_tokens.insert_tokens``); the stream is checked by
``vta_tokens.verify_tokens`` before the program is returned.

``build(func, cfg, kinds=None, data=None) -> Program``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.tir.visit import walk_expr, walk_stmt
from compiler.topi.vta.environment import (ACC_SCOPE, ALU_PREFIX, GEMM, INP_SCOPE, SCOPE_MEM,
                                           WGT_SCOPE, Env)
from vta_hw.config import MEMOP_PAD_BITS, VTAConfig
from vta_hw.isa import Alu, AluOp, Gemm, Load, MemId, Store
from vta_hw.program import DramLayout, Program

from .vta_eval import CodegenError, element_index, evaluate, flat_offset
from .vta_tokens import Entry, insert_tokens, verify_tokens
from .vta_uops import UopCache, fold

__all__ = ["CodegenError", "build", "BuildStats"]

_PAD_MAX = (1 << MEMOP_PAD_BITS) - 1


@dataclasses.dataclass
class BuildStats:
    """Counts from one ``build``: instructions by kind, uops, uop loads."""
    insns: dict = dataclasses.field(default_factory=dict)
    uops: int = 0
    uop_loads: int = 0
    peak_tokens: dict = dataclasses.field(default_factory=dict)


def _per_thread(s: ir.Stmt) -> list[ir.Stmt]:
    """``s`` once per virtual thread found inside it (each keeping only that thread's
    copies), or ``[s]`` when it has none: the vthread pass may sink the threads into
    a copy nest or an intrinsic; each thread's part becomes its own instructions."""
    ks = sorted({x.value for x in walk_stmt(s)
                 if isinstance(x, ir.AttrStmt) and x.key == "virtual_thread"})
    return [_project(s, k) for k in ks] if ks else [s]


def _project(s: ir.Stmt, k: int) -> ir.Stmt | None:
    if isinstance(s, ir.AttrStmt) and s.key == "virtual_thread":
        return _project(s.body, k) if s.value == k else None
    if isinstance(s, ir.SeqStmt):
        parts = [p for p in (_project(c, k) for c in s.stmts) if p is not None]
        return ir.seq(*parts) if parts else None
    if isinstance(s, (ir.For, ir.AttrStmt, ir.Allocate, ir.LetStmt)):
        body = _project(s.body, k)
        if body is None:
            return None
        return dataclasses.replace(s, body=body)
    if isinstance(s, ir.IfThenElse):
        t = _project(s.then_case, k)
        e = None if s.else_case is None else _project(s.else_case, k)
        return None if t is None and e is None else ir.IfThenElse(
            s.cond, t if t is not None else ir.SeqStmt(()), e)
    return s


def _aliases(body: ir.Stmt) -> dict[str, str]:
    """Result buffer -> operand buffer of every ALU intrinsic written ``dst = op(lhs, ...)``
    with two buffers (as te stages are): the ALU updates in place, so the result takes
    the operand's SRAM entries.

    Raises:
        CodegenError: the operand is read elsewhere too (it would be overwritten).
    """
    alias: dict[str, str] = {}
    reads: dict[str, int] = {}  # ALU operands and DMA sources
    for s in walk_stmt(body):
        if isinstance(s, ir.Store):
            for x in walk_expr(s.value):
                if x.op is Op.LOAD:
                    reads[x.arg.name] = reads.get(x.arg.name, 0) + 1
        if not (isinstance(s, ir.AttrStmt) and s.key == "tensorize"
                and isinstance(s.value, str) and s.value.startswith(ALU_PREFIX)):
            continue
        for part in _per_thread(s):
            ops = [x.value for x in walk_stmt(part) if isinstance(x, ir.Evaluate)]
            names = [o.src[0].arg.name if o.op is Op.CALL else None for o in ops]
            for n in names[1:]:
                if n is not None:
                    reads[n] = reads.get(n, 0) + 1
            if len(ops) == 3 and names[0] and names[1] and names[0] != names[1]:
                alias[names[0]] = names[1]
    for dst, lhs in alias.items():
        if reads.get(lhs, 0) > 1:
            raise CodegenError(f"ALU result {dst!r} would overwrite {lhs!r} in place, but "
                               f"{lhs!r} is read elsewhere too; give it its own stage")
    return alias


class _Gen:
    def __init__(self, func: ir.PrimFunc, cfg: VTAConfig, kinds: dict, data: dict):
        self.cfg, self.env_ = cfg, Env(cfg)
        self.layout = DramLayout(cfg)
        self.dram: dict[str, object] = {}
        for p in func.params:
            if not isinstance(p, ir.Buffer):
                raise CodegenError(f"parameter {p} of {func.name!r} is a scalar; VTA kernels take "
                                   "only DRAM buffers")
            self.dram[p.name] = self.layout.alloc(p.name, p.shape, p.dtype,
                                                  kinds.get(p.name, "scratch"), data.get(p.name))
        self.sram: dict[str, int] = {}     # SRAM buffer name -> base element
        self.top = {s: 0 for s in SCOPE_MEM}
        self.entries: list[Entry] = []
        self.uops = UopCache(cfg)
        self.alias = _aliases(func.body)
        self._group_entries: dict[int, int] = {}  # id(Allocate) -> entries of its group

    # ------------------------------------------------------------------ walking
    def stmt(self, s: ir.Stmt, env: dict) -> None:
        if isinstance(s, ir.SeqStmt):
            for c in s.stmts:
                self.stmt(c, env)
        elif isinstance(s, ir.For):
            lo, n = int(evaluate(s.min, env)), int(evaluate(s.extent, env))
            for v in range(lo, lo + n):
                self.stmt(s.body, {**env, s.var.name: v})
        elif isinstance(s, ir.IfThenElse):
            if evaluate(s.cond, env):
                self.stmt(s.then_case, env)
            elif s.else_case is not None:
                self.stmt(s.else_case, env)
        elif isinstance(s, ir.LetStmt):
            self.stmt(s.body, {**env, s.var.name: int(evaluate(s.value, env))})
        elif isinstance(s, ir.Allocate):
            self.allocate(s, env)
        elif isinstance(s, ir.AttrStmt):
            if s.key == "pragma_dma_copy":
                for part in _per_thread(s.body):
                    self.dma(part, env)
            elif s.key == "pragma_uop_scope" or s.key == "tensorize":
                for part in _per_thread(s if s.key == "tensorize" else s.body):
                    self.kernel(part, env)
            else:
                self.stmt(s.body, env)
        else:
            raise CodegenError(f"{type(s).__name__} outside a dma_copy pragma or uop scope: "
                               f"{s!r:.200}; the accelerator runs only DMA copies and tensor "
                               "intrinsics")

    def allocate(self, s: ir.Allocate, env: dict) -> None:
        b = s.buffer
        root = self._root(b.name)
        if root in self.sram:  # an in-place ALU group whose entries an outer member holds
            self.stmt(s.body, env)
            return
        if b.scope not in (INP_SCOPE, WGT_SCOPE, ACC_SCOPE):
            raise CodegenError(f"buffer {b.name!r} is allocated in scope {b.scope!r}; VTA kernels "
                               f"allocate only {INP_SCOPE}, {WGT_SCOPE}, {ACC_SCOPE}")
        ev = self.env_.elem_values(b.scope)
        n = self._group_entries.get(id(s))
        if n is None:
            n = self._group_entries[id(s)] = max(
                -(-x.buffer.size // ev) for x in walk_stmt(s)
                if isinstance(x, ir.Allocate) and self._root(x.buffer.name) == root)
        base = self.top[b.scope]
        depth = self.env_.depth(b.scope)
        if base + n > depth:
            raise CodegenError(f"buffer {b.name!r} needs {n} entries of {b.scope} at entry {base}, "
                               f"past its {depth} entries on {self.cfg.name}; use smaller tiles")
        self.sram[root] = base
        self.top[b.scope] = base + n
        self.stmt(s.body, env)
        self.top[b.scope] = base
        del self.sram[root]

    # ------------------------------------------------------------------ DMA
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
        loops, leaf = [], s
        while isinstance(leaf, ir.For):
            loops.append(leaf)
            leaf = leaf.body
        if (isinstance(leaf, ir.IfThenElse) and isinstance(leaf.then_case, ir.Store)
                and isinstance(leaf.else_case, ir.Store)
                and leaf.then_case.buffer == leaf.else_case.buffer
                and leaf.then_case.indices == leaf.else_case.indices):
            # padding as te lowers if_then_else: the same element, a value or zero
            t, e = leaf.then_case, leaf.else_case
            leaf = ir.Store(t.buffer, ir.Expr(Op.SELECT, t.value.dtype, (leaf.cond, t.value, e.value)),
                            t.indices)
        if not isinstance(leaf, ir.Store):
            raise CodegenError(f"a dma_copy pragma must hold a loop nest around one Store, found "
                               f"{type(leaf).__name__}: {leaf!r:.200}")
        elem = {}
        if dt.lanes(leaf.value.dtype) == 1:
            loops, elem = self._element_loops(loops, leaf, env)
        outer, inner = loops[:-2], loops[-2:]
        self._dma_outer(outer, inner, leaf, env, elem)

    def _element_loops(self, loops, st: ir.Store, env: dict):
        """A scalar copy (as te lowering writes it): the innermost loops must walk one
        element, value by value, on both sides; they are dropped (their variables 0)."""
        value = st.value
        while value.op in (Op.CAST, Op.SELECT):
            value = value.src[0] if value.op is Op.CAST else value.src[1]
        sram = st.buffer if st.buffer.scope != "global" else value.arg
        if sram.scope not in (INP_SCOPE, WGT_SCOPE, ACC_SCOPE) or value.op is not Op.LOAD:
            raise CodegenError(f"a dma_copy Store must copy between DRAM and an SRAM buffer, "
                               f"not {st!r:.200}")
        ev = self.env_.elem_values(sram.scope)
        k, prod = len(loops), 1
        while k > 0 and prod < ev:
            k -= 1
            prod *= int(evaluate(loops[k].extent, env))
        if prod != ev:
            raise CodegenError(f"a scalar DMA copy into/out of {sram.name!r} must end in loops "
                               f"over exactly one {ev}-value element; theirs cover {prod}")
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
                raise CodegenError(f"the element loops of a DMA copy must walk {buf.name!r} "
                                   "contiguously, value by value")
        return loops[:k], elem

    def _dma_outer(self, outer, inner, st, env, elem=None):
        if outer:
            f = outer[0]
            lo, n = int(evaluate(f.min, env)), int(evaluate(f.extent, env))
            for v in range(lo, lo + n):
                self._dma_outer(outer[1:], inner, st, {**env, f.var.name: v}, elem)
            return
        shape, grid = [], {**env, **(elem or {})}
        for axis, f in enumerate([None] * (2 - len(inner)) + list(inner)):
            if f is None:
                shape.append(1)
                continue
            lo, n = int(evaluate(f.min, env)), int(evaluate(f.extent, env))
            shape.append(n)
            grid[f.var.name] = (np.arange(n) + lo).reshape((n, 1) if axis == 0 else (1, n))
        Y, X = shape
        if Y * X == 0:
            return
        self._dma_2d(st, grid, Y, X)

    def _dma_2d(self, st: ir.Store, grid: dict, Y: int, X: int) -> None:
        value, cond = st.value, None
        while value.op is Op.CAST:
            value = value.src[0]
        if value.op is Op.SELECT:
            cond, value, other = value.src
            while other.op in (Op.CAST, Op.BROADCAST):
                other = other.src[0]
            if not (other.op is Op.CONST and other.arg == 0):
                raise CodegenError(f"a padded DMA copy must fill with 0, not {other}")
            while value.op is Op.CAST:
                value = value.src[0]
        if value.op is not Op.LOAD:
            raise CodegenError(f"a dma_copy Store must copy a Load, not {value!r:.200}")
        dst, src = st.buffer, value.arg
        yy = np.arange(Y)[:, None]
        xx = np.arange(X)[None, :]
        if dst.scope != "global" and src.scope == "global":
            sram_buf, sram_idx, dram_buf, dram_idx, load = dst, st.indices, src, value.src, True
        elif dst.scope == "global" and src.scope == ACC_SCOPE:
            if cond is not None:
                raise CodegenError(f"STORE to {dst.name!r} cannot pad; drop the select")
            sram_buf, sram_idx, dram_buf, dram_idx, load = src, value.src, dst, st.indices, False
        else:
            raise CodegenError(f"DMA copy from {src.name!r} ({src.scope}) to {dst.name!r} "
                               f"({dst.scope}): VTA moves DRAM->INP/WGT/ACC SRAM and ACC(OUT)->DRAM")
        if self._root(sram_buf.name) not in self.sram:
            raise CodegenError(f"SRAM buffer {sram_buf.name!r} is used outside its Allocate")
        ev = self.env_.elem_values(sram_buf.scope)
        s_idx = np.broadcast_to(element_index(sram_buf, sram_idx, ev, grid), (Y, X))
        base = int(s_idx[0, 0])
        if not np.array_equal(s_idx, base + yy * X + xx):
            raise CodegenError(f"the SRAM side of a DMA copy ({sram_buf.name!r}) must be dense "
                               f"rows of {X} elements; got indices {s_idx.tolist()!r:.120}")
        mem = SCOPE_MEM[sram_buf.scope] if load else MemId.OUT
        eb = self.cfg.elem_bytes(mem.name.lower())
        spec = self.dram[dram_buf.name]
        if spec.offset % eb:
            raise CodegenError(f"DRAM buffer {dram_buf.name!r} is not aligned to {eb}-byte elements")
        d_idx = np.broadcast_to(element_index(dram_buf, dram_idx, ev, grid), (Y, X))
        valid = np.ones((Y, X), bool) if cond is None else np.broadcast_to(
            np.asarray(evaluate(cond, grid), bool), (Y, X))
        rows, cols = np.flatnonzero(valid.any(axis=1)), np.flatnonzero(valid.any(axis=0))
        if rows.size == 0:
            y0 = y1 = x0 = 0
            x1 = X
            pads = (Y, 0, 0, 0)
            dram_base, stride = self.layout.elem(spec, mem.name.lower()), X
        else:
            y0, y1, x0, x1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
            rect = np.zeros((Y, X), bool)
            rect[y0:y1, x0:x1] = True
            if not np.array_equal(valid, rect):
                raise CodegenError(f"the valid part of a padded DMA copy into {sram_buf.name!r} is "
                                   "not a rectangle; pads can only surround it")
            pads = (y0, Y - y1, x0, X - x1)
            d = d_idx[y0:y1, x0:x1]
            stride = int(d[1, 0] - d[0, 0]) if y1 - y0 > 1 else x1 - x0
            ry = np.arange(y1 - y0)[:, None]
            rx = np.arange(x1 - x0)[None, :]
            if not np.array_equal(d, d[0, 0] + ry * stride + rx) or stride < 0:
                raise CodegenError(f"the DRAM side of a DMA copy ({dram_buf.name!r}) must be rows of "
                                   "contiguous elements at a fixed non-negative stride")
            dram_base = self.layout.elem(spec, mem.name.lower()) + int(d[0, 0])
            if int(d.min()) < 0 or (int(d.max()) + 1) * ev > int(np.prod(dram_buf.shape)):
                raise CodegenError(f"DMA copy reads/writes {dram_buf.name!r} out of bounds")
        if max(pads) > _PAD_MAX:
            raise CodegenError(f"DMA copy into {sram_buf.name!r} needs pads {pads}; each pad field "
                               f"holds at most {_PAD_MAX} (reduce the padding or tile it)")
        sram_base = self.sram[self._root(sram_buf.name)] + base
        if load:
            insn = Load(mem=mem, sram_base=sram_base, dram_base=dram_base, y_size=y1 - y0,
                        x_size=x1 - x0, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1],
                        x_pad_0=pads[2], x_pad_1=pads[3])
            self.entries.append(Entry(insn, writes=frozenset({self._root(sram_buf.name)})))
        else:
            insn = Store(mem=MemId.OUT, sram_base=sram_base, dram_base=dram_base, y_size=Y,
                         x_size=X, x_stride=stride)
            self.entries.append(Entry(insn, reads=frozenset({self._root(sram_buf.name)})))

    # ------------------------------------------------------------------ GEMM / ALU kernels
    def kernel(self, s: ir.Stmt, env: dict) -> None:
        loops, leaf = [], s
        while isinstance(leaf, ir.For):
            loops.append(leaf)
            leaf = leaf.body
        if not (isinstance(leaf, ir.AttrStmt) and leaf.key == "tensorize"):
            raise CodegenError(f"a uop scope must hold a loop nest around one tensor intrinsic, "
                               f"found {type(leaf).__name__}: {leaf!r:.200}")
        name = leaf.value
        grid, ext = dict(env), []
        nl = len(loops)
        for k, f in enumerate(loops):
            lo, n = int(evaluate(f.min, env)), int(evaluate(f.extent, env))
            ext.append(n)
            shape = [1] * nl
            shape[k] = n
            grid[f.var.name] = (np.arange(n) + lo).reshape(shape)
        if 0 in ext:
            return
        ext = [1] * max(0, 3 - nl) + ext
        U, O, I = int(np.prod(ext[:-2])), ext[-2], ext[-1]
        body = leaf.body.stmts if isinstance(leaf.body, ir.SeqStmt) else (leaf.body,)
        ops, reset_cond, reset_ops = [], None, []
        for e in body:
            if isinstance(e, ir.IfThenElse) and e.else_case is None and name == GEMM:
                # te's tensorize: reset on the first reduction iteration of each output
                reset_cond = e.cond
                then = e.then_case.stmts if isinstance(e.then_case, ir.SeqStmt) else (e.then_case,)
                reset_ops = [x.value for x in then if isinstance(x, ir.Evaluate)]
                continue
            if not isinstance(e, ir.Evaluate):
                raise CodegenError(f"intrinsic {name!r}: expected Evaluate statements, not {e!r:.100}")
            ops.append(e.value)

        def idx_of(ptr: ir.Expr):
            if not (ptr.op is Op.CALL and ptr.arg == "address_of" and ptr.src[0].op is Op.LOAD):
                raise CodegenError(f"intrinsic {name!r}: operand {ptr} is not address_of(buffer[...])")
            ld = ptr.src[0]
            b = ld.arg
            if self._root(b.name) not in self.sram:
                raise CodegenError(f"intrinsic {name!r} uses {b.name!r}, which is not an SRAM "
                                   "buffer allocated around it")
            i = element_index(b, ld.src, self.env_.elem_values(b.scope), grid)
            full = np.broadcast_to(i, tuple(ext[-nl:]) if nl else ()).reshape(U, O, I)
            return b, full + self.sram[self._root(b.name)]

        if name == GEMM:
            if reset_cond is not None:
                # every reset precedes, in loop order, the updates of its output, so the
                # resets run first as one instruction over the iterations that reset
                mask = np.broadcast_to(np.asarray(evaluate(reset_cond, grid), bool),
                                       tuple(ext[-nl:]) if nl else ()).reshape(U, O, I)
                acc_b, dst = self._gemm_operands(reset_ops, idx_of)[ACC_SCOPE]
                if mask.all():
                    self._gemm(acc_b, dst, None)
                elif mask.any():
                    self._gemm(acc_b, np.unique(dst[mask]).reshape(-1, 1, 1), None)
            ops_by = self._gemm_operands(ops, idx_of)
            acc_b, dst = ops_by[ACC_SCOPE]
            self._gemm(acc_b, dst, ops_by if INP_SCOPE in ops_by else None)
            return
        if not (isinstance(name, str) and name.startswith(ALU_PREFIX)):
            raise CodegenError(f"unknown tensor intrinsic {name!r}; VTA has {GEMM!r} and "
                               f"'{ALU_PREFIX}<MIN|MAX|ADD|SHR|MUL>'")
        op = AluOp[name[len(ALU_PREFIX):]]
        dst_b, dst = idx_of(ops[0])
        if len(ops) == 3:  # dst = op(lhs, ...): in place, dst aliases lhs (see _aliases)
            lhs_b, lhs = idx_of(ops.pop(1))
            if not np.array_equal(lhs, dst):
                raise CodegenError(f"ALU {op.name} writes {dst_b.name!r} from {lhs_b.name!r} at "
                                   "other entries; the ALU works in place, so the result stage "
                                   "must have its operand's layout")
        reads = set()
        if ops[1].op is Op.CONST:
            imm, src = int(ops[1].arg), dst
        else:
            imm = None
            src_b, src = idx_of(ops[1])
            reads.add(src_b.name)
        uops, io, ii, fac = fold({"dst": dst, "src": src}, self.cfg)
        insn = Alu(iter_out=io, iter_in=ii, dst_factor_out=fac["dst"][0],
                   dst_factor_in=fac["dst"][1], src_factor_out=fac["src"][0],
                   src_factor_in=fac["src"][1], alu_op=op, use_imm=imm is not None,
                   imm=imm or 0)
        self._emit(insn, uops, reads, {dst_b.name})

    @staticmethod
    def _gemm_operands(ops, idx_of) -> dict:
        by_scope = {}
        for p in ops:
            b, i = idx_of(p)
            by_scope[b.scope] = (b, i)
        if ACC_SCOPE not in by_scope:
            raise CodegenError("GEMM intrinsic without an accumulator operand")
        if (INP_SCOPE in by_scope) != (WGT_SCOPE in by_scope):
            raise CodegenError("GEMM intrinsic with only one of its inp/wgt operands")
        return by_scope

    def _gemm(self, acc_b, dst, ops_by) -> None:
        """One GEMM over ``dst`` (``(U, O, I)`` ACC indices): reset if ``ops_by`` is None."""
        reset = ops_by is None
        zero = np.zeros_like(dst)
        src = zero if reset else ops_by[INP_SCOPE][1]
        wgt = zero if reset else ops_by[WGT_SCOPE][1]
        uops, io, ii, fac = fold({"dst": dst, "src": src, "wgt": wgt}, self.cfg)
        insn = Gemm(reset=reset, iter_out=io, iter_in=ii,
                    dst_factor_out=fac["dst"][0], dst_factor_in=fac["dst"][1],
                    src_factor_out=fac["src"][0], src_factor_in=fac["src"][1],
                    wgt_factor_out=fac["wgt"][0], wgt_factor_in=fac["wgt"][1])
        reads = set() if reset else {ops_by[INP_SCOPE][0].name, ops_by[WGT_SCOPE][0].name}
        self._emit(insn, uops, reads, {acc_b.name})

    def _emit(self, insn, uops, reads, writes) -> None:
        bgn, uload = self.uops.place(uops)
        if uload is not None:
            self.entries.append(Entry(uload))
        insn = dataclasses.replace(insn, uop_bgn=bgn, uop_end=bgn + len(uops))
        self.entries.append(Entry(insn, frozenset(map(self._root, reads)),
                                  frozenset(map(self._root, writes))))

    def _root(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name


def build(func: ir.PrimFunc, cfg: VTAConfig, kinds: dict[str, str] | None = None,
          data: dict | None = None, stats: BuildStats | None = None) -> Program:
    """Generate the ``Program`` of ``func`` for ``cfg`` (forms in the module docstring).

    Args:
        func: the kernel; each Buffer parameter becomes a DRAM buffer of the program.
        kinds: buffer name -> "input" | "output" | "param" | "scratch".
        data: buffer name -> initial contents (e.g. packed weights).
        stats: filled with instruction counts when given.

    Raises:
        CodegenError: IR outside the supported forms, buffers that overflow an
            SRAM, DMA copies the hardware cannot express; TokenError (a
            CodegenError) if the dependency tokens fail verification.
    """
    g = _Gen(func, cfg, dict(kinds or {}), dict(data or {}))
    g.stmt(func.body, {})
    base = g.layout.alloc_uops(max(1, len(g.uops.dram)))
    entries = [dataclasses.replace(e, insn=dataclasses.replace(e.insn, dram_base=e.insn.dram_base + base))
               if isinstance(e.insn, Load) and e.insn.mem == MemId.UOP else e for e in g.entries]
    insns = insert_tokens(entries)
    peak = verify_tokens(insns)
    uops = g.uops.dram
    if stats is not None:
        for i in insns:
            k = i.opcode.name if not isinstance(i, (Load, Store)) else f"{i.opcode.name}_{i.mem.name}"
            stats.insns[k] = stats.insns.get(k, 0) + 1
        stats.uops, stats.uop_loads, stats.peak_tokens = len(uops), g.uops.loads, peak
    return g.layout.finish(insns, uops)
