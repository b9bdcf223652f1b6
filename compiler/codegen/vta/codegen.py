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
  others become uops. Without the pragma, a loop nest whose leaf is one
  tensor intrinsic is a uop scope by itself (``auto_kernel``: the whole nest
  while each instruction's uops fit half the uop buffer, else per iteration of
  its outer loops); a lone tensorize statement is a one-uop kernel. A GEMM
  reset under ``if cond`` (te's tensorize of a
  reduction) becomes a reset instruction over the iterations where ``cond``
  holds, ahead of the update.
- virtual-thread copies sunk inside a copy nest or an intrinsic are split back
  out: each thread's part becomes its own instructions, thread by thread.
- ``AttrStmt("pragma_alu")`` (TVM-VTA's ``env.alu``) around an elementwise
  stage's loop nest: ``alu_pragma.inject_alu``, run first, matches its body
  into ALU intrinsics over the nest's outer loops.
- an ALU intrinsic naming a result, a left operand and a right operand (te's
  ``out = op(in, ...)`` stages) runs in place: the result buffer shares the
  left operand's entries (``vta_threads.inplace_aliases``).

DRAM: each Buffer parameter becomes a named region of the program's
``DramLayout`` (``Program.buffers`` is the relocation table: name, byte
offset, shape, dtype, kind); instructions address it in elements.

Dependency tokens come from the buffers each instruction touches
(``vta_tokens.insert_tokens``); the stream is checked by
``vta_tokens.verify_tokens`` before the program is returned.

``build(func, cfg, kinds=None, data=None) -> Program``. Helpers: ``vta_dma``
(copies -> LOAD/STORE), ``vta_uops`` (uop folding, uop cache), ``vta_tokens``
(dependency tokens, verifier), ``vta_threads`` (virtual threads, in-place ALU
groups), ``vta_eval`` (index evaluation), ``vta_memo`` (what a uop kernel's
instructions depend on: each distinct kernel is built once).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.tir.visit import walk_stmt
from compiler.topi.vta.environment import (ACC_SCOPE, ALU_PREFIX, GEMM, INP_SCOPE, SCOPE_MEM,
                                           WGT_SCOPE, Env)
from vta_hw.alu import IMM_CONTROL
from vta_hw.config import VTAConfig
from vta_hw.isa import Alu, AluOp, Gemm, Load, MemId, Store
from vta_hw.program import DramLayout, Program

from . import alu_pragma
from .dma import DmaMixin
from .eval import CodegenError, element_index, evaluate
from .memo import outer_inputs
from .threads import inplace_aliases, per_thread
from .tokens import Entry, insert_tokens, verify_tokens
from .uops import UopCache, fold

__all__ = ["CodegenError", "build", "BuildStats"]



@dataclasses.dataclass
class BuildStats:
    """Counts from one ``build``: instructions by kind, uops, uop loads."""
    insns: dict = dataclasses.field(default_factory=dict)
    uops: int = 0
    uop_loads: int = 0
    peak_tokens: dict = dataclasses.field(default_factory=dict)


class _Gen(DmaMixin):
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
        self.alias = inplace_aliases(func.body)
        self._group_entries: dict[int, int] = {}  # id(Allocate) -> entries of its group
        self._split: dict[int, tuple] = {}         # id(stmt) -> (stmt, its per-thread parts)
        self._copies: dict[int, tuple] = {}        # id(nest) -> (nest, loops, leaf, names, once)
        self._sides: dict[int, tuple] = {}         # id(copy Store) -> (Store, its two sides)
        self._affine_forms: dict[int, tuple] = {}  # id(copy Store) -> (Store, _affine_form)
        self._inputs: dict[int, tuple] = {}        # id(kernel) -> (kernel, its outer inputs)
        self._kernels: dict[tuple, list] = {}      # kernel key -> its instructions (vta_memo)
        self._placed: dict[tuple, object] = {}     # (id(kernel insn), uop_bgn) -> placed insn

    # ------------------------------------------------------------------ walking
    def stmt(self, s: ir.Stmt, env: dict) -> None:
        if isinstance(s, ir.SeqStmt):
            for c in s.stmts:
                self.stmt(c, env)
        elif isinstance(s, ir.For):
            parts = self._parts(s, _intrin_nests)
            if parts:
                for part in parts:
                    self.auto_kernel(part, env)
                return
            lo, n = int(evaluate(s.min, env)), int(evaluate(s.extent, env))
            inner, name = dict(env), s.var.name   # one copy, the variable rebound per iteration
            for v in range(lo, lo + n):
                inner[name] = v
                self.stmt(s.body, inner)
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
                for part in self._parts(s.body, per_thread):
                    self.dma(part, env)
            elif s.key == "pragma_uop_scope" or s.key == "tensorize":
                for part in self._parts(s if s.key == "tensorize" else s.body, per_thread):
                    self.kernel(part, env)
            else:
                self.stmt(s.body, env)
        else:
            stage = f"stage {s.buffer.name!r}" if isinstance(s, ir.Store) else "a statement"
            raise CodegenError(f"{stage} inside loops ({loop_names(env)}) is neither a DMA copy, an "
                               f"ALU stage nor a tensor intrinsic: {s!r:.200}; mark a copy stage "
                               "with pragma env.dma_copy, an elementwise stage in "
                               "local.acc_buffer with pragma env.alu, or tensorize it with "
                               "env.gemm")

    def _parts(self, s: ir.Stmt, split) -> list:
        """``split(s)`` (the per-thread parts of a copy or an intrinsic nest), computed once
        per statement: the loops around it visit it once per iteration."""
        hit = self._split.get(id(s))
        if hit is None or hit[0] is not s:
            hit = self._split[id(s)] = (s, split(s))
        return hit[1]

    def allocate(self, s: ir.Allocate, env: dict) -> None:
        b = s.buffer
        root = self._root(b.name)
        if root in self.sram:  # an in-place ALU group whose entries an outer member holds
            self.stmt(s.body, env)
            return
        if b.scope not in (INP_SCOPE, WGT_SCOPE, ACC_SCOPE):
            raise CodegenError(f"stage {b.name!r} (allocated inside loops ({loop_names(env)})) is "
                               f"in scope {b.scope!r}; VTA kernels allocate only {INP_SCOPE}, "
                               f"{WGT_SCOPE}, {ACC_SCOPE}: set_scope it to one of them or compute "
                               "it on the host")
        ev = self.env_.elem_values(b.scope)
        n = self._group_entries.get(id(s))
        if n is None:
            n = self._group_entries[id(s)] = max(
                -(-x.buffer.size // ev) for x in walk_stmt(s)
                if isinstance(x, ir.Allocate) and self._root(x.buffer.name) == root)
        base = self.top[b.scope]
        depth = self.env_.depth(b.scope)
        if base + n > depth:
            raise CodegenError(f"stage {b.name!r}, allocated inside loops ({loop_names(env)}), "
                               f"needs {n} entries of {b.scope} at entry {base}, past its {depth} "
                               f"entries on {self.cfg.name}; use smaller tiles (split the "
                               f"consumer's loops and compute {b.name!r} at an inner one)")
        self.sram[root] = base
        self.top[b.scope] = base + n
        self.stmt(s.body, env)
        self.top[b.scope] = base
        del self.sram[root]

    # ------------------------------------------------------------------ GEMM / ALU kernels
    def auto_kernel(self, s: ir.Stmt, env: dict) -> None:
        """A loop nest around one intrinsic without a uop scope: one instruction over the
        whole nest when its uops fit half the uop buffer, else one per iteration of its
        outermost loop, each over the rest of the nest."""
        if not isinstance(s, ir.For):
            self.kernel(s, env)
            return
        if self.kernel(s, env, self.cfg.uop_depth // 2):
            return
        lo, n = int(evaluate(s.min, env)), int(evaluate(s.extent, env))
        inner, name = dict(env), s.var.name
        for v in range(lo, lo + n):
            inner[name] = v
            self.auto_kernel(s.body, inner)

    def kernel(self, s: ir.Stmt, env: dict, max_uops: int | None = None) -> bool:
        """Emit the instructions of one uop scope ``s`` (a loop nest around one intrinsic),
        built once per value of its outer inputs and SRAM placement (``vta_memo``) and
        replayed through the uop cache otherwise; with ``max_uops``, emit nothing and
        return False when an instruction would need more uops than that."""
        hit = self._inputs.get(id(s))
        if hit is None or hit[0] is not s:
            hit = self._inputs[id(s)] = (s, outer_inputs(s))
        key = (id(s), tuple(self.sram.items()),
               tuple(int(evaluate(e, env)) for e in hit[1]))
        out = self._kernels.get(key)
        if out is None:
            out = self._kernels[key] = [
                (insn, uops, frozenset(map(self._root, reads)), frozenset(map(self._root, writes)))
                for insn, uops, reads, writes in self._build_kernel(s, env)]
        if max_uops is not None and any(len(uops) > max_uops for _, uops, _, _ in out):
            return False
        for insn in out:
            self._emit(*insn)
        return True

    def _build_kernel(self, s: ir.Stmt, env: dict) -> list:
        """``[(instruction, uops, reads, writes)]`` of uop scope ``s`` at ``env``."""
        loops, leaf = [], s
        while isinstance(leaf, ir.For):
            loops.append(leaf)
            leaf = leaf.body
        if not (isinstance(leaf, ir.AttrStmt) and leaf.key == "tensorize"):
            raise CodegenError(f"a uop scope (loops {', '.join(f.var.name for f in loops) or 'none'}) "
                               f"must hold a loop nest around one tensor intrinsic, found "
                               f"{type(leaf).__name__}: {leaf!r:.200}; put env.uop_pragma at an "
                               "axis whose inner loops hold only the tensorized stage")
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
            return []
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
                raise CodegenError(f"intrinsic {name!r} in loops ({loop_names(grid)}) uses stage "
                                   f"{b.name!r}, which is not an SRAM buffer allocated around it; "
                                   f"compute {b.name!r} (in an SRAM scope) at a loop outside the "
                                   "intrinsic")
            i = element_index(b, ld.src, self.env_.elem_values(b.scope), grid)
            full = np.broadcast_to(i, tuple(ext[-nl:]) if nl else ()).reshape(U, O, I)
            return b, full + self.sram[self._root(b.name)]

        out: list = []   # (instruction, uops, reads, writes), emitted once all fit
        if name == GEMM:
            if reset_cond is not None:
                # every reset precedes, in loop order, the updates of its output, so the
                # resets run first as one instruction over the iterations that reset
                mask = np.broadcast_to(np.asarray(evaluate(reset_cond, grid), bool),
                                       tuple(ext[-nl:]) if nl else ()).reshape(U, O, I)
                acc_b, dst = self._gemm_operands(reset_ops, idx_of)[ACC_SCOPE]
                if mask.all():
                    out.append(self._gemm(acc_b, dst, None))
                elif mask.any():
                    # the entries to zero, as loops where they allow (fold falls back to uops)
                    d = np.unique(dst[mask])
                    inner = ext[-1] if d.size % ext[-1] == 0 else 1
                    out.append(self._gemm(acc_b, d.reshape(1, d.size // inner, inner), None))
            ops_by = self._gemm_operands(ops, idx_of)
            acc_b, dst = ops_by[ACC_SCOPE]
            out.append(self._gemm(acc_b, dst, ops_by if INP_SCOPE in ops_by else None))
            return out
        if not (isinstance(name, str) and name.startswith(ALU_PREFIX)):
            raise CodegenError(f"unknown tensor intrinsic {name!r}; VTA has {GEMM!r} and "
                               f"'{ALU_PREFIX}<{'|'.join(AluOp.__members__)}>'")
        op = AluOp[name[len(ALU_PREFIX):]]
        dst_b, dst = idx_of(ops[0])
        ctl = int(ops.pop().arg) if op in IMM_CONTROL else None  # REQUANT: (dst, src, ctl)
        if len(ops) == 3:  # dst = op(lhs, ...): in place, dst aliases lhs (see _aliases)
            lhs_b, lhs = idx_of(ops.pop(1))
            if not np.array_equal(lhs, dst):
                raise CodegenError(f"ALU {op.name} in loops ({loop_names(grid)}) writes stage "
                                   f"{dst_b.name!r} from {lhs_b.name!r} at other entries; the ALU "
                                   "works in place, so the result stage must have its operand's "
                                   f"layout: compute {dst_b.name!r} and {lhs_b.name!r} at the same "
                                   "loop with the same axes")
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
                   imm=ctl if ctl is not None else imm or 0)
        return [(insn, uops, reads, {dst_b.name})]

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

    def _gemm(self, acc_b, dst, ops_by) -> tuple:
        """One GEMM over ``dst`` (``(U, O, I)`` ACC indices), reset if ``ops_by`` is None:
        ``(instruction, uops, reads, writes)`` for ``_emit``."""
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
        return insn, uops, reads, {acc_b.name}

    def _emit(self, insn, uops, reads: frozenset, writes: frozenset) -> None:
        """Append ``insn`` (a GEMM/ALU of a built kernel, kept alive by ``_kernels``) with
        its uops placed; ``reads``/``writes`` are root buffer names."""
        bgn, uload = self.uops.place(uops)
        if uload is not None:
            self.entries.append(Entry(uload))
        key = (id(insn), bgn)    # the same kernel at the same uops: one record, shared
        placed = self._placed.get(key)
        if placed is None:
            placed = self._placed[key] = dataclasses.replace(insn, uop_bgn=bgn,
                                                             uop_end=bgn + len(uops))
        self.entries.append(Entry(placed, reads, writes))

    def _root(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name


def loop_names(env: dict) -> str:
    """The loop (and let) variables bound in ``env``, outermost first, for messages."""
    return ", ".join(repr(k) for k in env) or "none"


def _leaf(s: ir.Stmt) -> ir.Stmt:
    while isinstance(s, ir.For):
        s = s.body
    return s


def _is_intrin(s: ir.Stmt) -> bool:
    return isinstance(s, ir.AttrStmt) and s.key == "tensorize"


def _intrin_nests(s: ir.For) -> list[ir.Stmt]:
    """``s`` once per virtual thread when it is a loop nest around one tensor intrinsic
    (the automatic uop scope), else []."""
    leaf = _leaf(s)
    if not (_is_intrin(leaf) or isinstance(leaf, ir.SeqStmt) and leaf.stmts and all(
            isinstance(c, ir.AttrStmt) and c.key == "virtual_thread" for c in leaf.stmts)):
        return []
    parts = per_thread(s)
    return parts if all(_is_intrin(_leaf(p)) for p in parts) else []


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
        compiler.te.ScheduleError: an ALU pragma nest that does not match
            (``alu_pragma``).
    """
    func = alu_pragma.inject_alu(func, Env(cfg))
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
