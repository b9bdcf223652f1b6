"""The LLVM backend: lowered PrimFuncs to an LLVM module (llvmlite.ir).

Input: PrimFuncs in the form ``compiler.tir.lower`` hands to code generation
(documented in ``compiler/tir/ir.py``: flat 1-D buffer indices, RAMP and
BROADCAST vectors, For kinds). Output: :class:`LLVMSource`, the textual
LLVM IR of one module plus each kernel's argument specs, ready for
``BuiltModule`` (optimise, JIT, object, shared library).

Per PrimFunc ``f(p0, ..., pn-1)`` the module holds::

    int32_t f(p0, ..., pn-1);   // Buffer -> pointer (noalias), VAR -> scalar value

Statements:

* For SERIAL: a counted loop. PARALLEL: outlined and run on libgomp's pool
  (``compiler/codegen/parallel.py``); nested parallel loops and targets
  without threads (wasm32) run serially. VECTORIZED (normally removed by the
  ``vectorize`` pass; accepted from hand-built IR): when the extent is a
  constant and the body holds only stores/lets, the loop variable becomes a
  ramp and the body one vector statement per 64-lane chunk; otherwise a
  serial loop. UNROLLED: copied out when the extent is a constant <= 256.
  ``For.thread`` (GPU axes) is rejected.
* Allocate: constant-size stack memory in the function's entry block
  (64-byte aligned; up to 64 KiB, so schedules' local accumulators become
  registers) or ``aligned_alloc``/``free`` around the body above that.
* IfThenElse (scalar condition), LetStmt, SeqStmt, Evaluate; AttrStmt
  (pragmas, virtual_thread leftovers) emits its body.

Errors: ``ValueError`` naming the statement or expression the backend cannot
emit (see also ``llvm_expr.py``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from llvmlite import ir

from compiler.codegen.llvm import intrin_x86
from compiler.codegen.llvm import parallel as par
from compiler.codegen.llvm.dtypes import scalar_type
from compiler.codegen.llvm.expr import ExprEmitter
from compiler.codegen.llvm.loops import counted_loop
from compiler.codegen.llvm.module import ArgSpec
from compiler.codegen.llvm.target import Target
from compiler.codegen.llvm.vector import Ramp, broadcast, extract_lanes, lanes_of, materialize
from compiler.tir import ir as tir
from compiler.tir.ops import ForKind, Op

I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
MAX_STACK_BYTES = 64 * 1024
MAX_UNROLL = 256
MAX_VECTOR_LANES = 64
ALIGN = 64
SPECS_SYMBOL = "__compiler_arg_specs"
PARALLEL_SCHEDULE = "dynamic"    # or "static"; see compiler/codegen/parallel.py


@dataclass
class LLVMSource:
    """One LLVM module's IR text, its target and the argument specs of its kernels.

    Attributes:
        target: what the IR is for.
        text: LLVM IR (unoptimised) as text.
        specs: kernel name -> its :class:`ArgSpec` list, in parameter order.
    """

    target: Target
    text: str
    specs: "dict[str, list[ArgSpec]]" = field(default_factory=dict)


def arg_specs(func: tir.PrimFunc) -> "list[ArgSpec]":
    """The argument specs of a PrimFunc: buffers give shape/dtype, VAR params shape None."""
    out = []
    for p in func.params:
        if isinstance(p, tir.Buffer):
            scalar_type(p.dtype)   # validates
            out.append(ArgSpec(p.name, tuple(int(n) for n in p.shape), p.dtype, tuple(p.strides)))
        elif isinstance(p, tir.Expr) and p.op is Op.VAR:
            scalar_type(p.dtype)
            out.append(ArgSpec(p.name, None, p.dtype))
        else:
            raise ValueError(f"PrimFunc {func.name!r}: parameter {p!r} must be a Buffer or a VAR")
    return out


def codegen_llvm(funcs: "list[tir.PrimFunc]", target: Target, fp_contract: bool = False) -> LLVMSource:
    """Emit LLVM IR for ``funcs`` (lowered PrimFuncs) for ``target``.

    Args:
        funcs: PrimFuncs with distinct names, in the lowered form.
        target: the code generation target (its triple and data layout go
            into the module; its thread support decides parallel loops).
        fp_contract: set LLVM's ``contract`` flag on float add/sub/mul so
            ``a*b + c`` may become one FMA (off by default; no other fast-math
            flag is ever set).

    Raises:
        ValueError: duplicate names, or IR the backend cannot emit.
    """
    gen = _FunctionEmitter(target, fp_contract)
    specs = {}
    for f in funcs:
        if f.name in specs:
            raise ValueError(f"two PrimFuncs are named {f.name!r}; kernel names must be unique")
        specs[f.name] = gen.add_function(f)
    gen.add_specs_symbol(specs)
    return LLVMSource(target, str(gen.module), specs)


class _FunctionEmitter(ExprEmitter):
    """Statement emission and function/outlining bookkeeping over :class:`ExprEmitter`."""

    def __init__(self, target: Target, fp_contract: bool):
        self.target = target
        self.fp_contract = fp_contract
        self.schedule = PARALLEL_SCHEDULE
        self.module = ir.Module(name="kernels")
        self.module.triple = target.triple
        self.module.data_layout = str(target.machine().target_data)
        self._outlined = 0
        # per-function state; swapped while emitting an outlined parallel body
        self.fn = self.builder = self.entry = None
        self.env, self.buffers, self.in_parallel = {}, {}, False

    # ------------------------------------------------------------------ functions
    def add_function(self, func: tir.PrimFunc) -> "list[ArgSpec]":
        specs = arg_specs(func)
        types = [PTR if s.shape is not None else scalar_type(s.dtype).reg() for s in specs]
        fn = ir.Function(self.module, ir.FunctionType(I32, types), name=func.name)
        self.env, self.buffers, self.in_parallel = {}, {}, False
        for p, arg in zip(func.params, fn.args):
            arg.name = p.name
            if isinstance(p, tir.Buffer):
                arg.add_attribute("noalias")
                self.buffers[p] = arg
            else:
                self.env[p] = arg
        self._begin(fn)
        self.stmt(func.body)
        intrin_x86.release_tiles(self.builder, self.module)
        self.builder.ret(ir.Constant(I32, 0))
        return specs

    def _begin(self, fn: ir.Function) -> None:
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        body = fn.append_basic_block("body")
        ir.IRBuilder(self.entry).branch(body)
        self.builder = ir.IRBuilder(body)

    def add_specs_symbol(self, specs) -> None:
        """A global C string with the kernels' argument specs (JSON), read by ``load_library``."""
        if not self.target.is_host:
            return
        data = json.dumps({name: [s.to_json() for s in ss] for name, ss in specs.items()})
        raw = bytearray(data.encode()) + b"\0"
        gv = ir.GlobalVariable(self.module, ir.ArrayType(ir.IntType(8), len(raw)), SPECS_SYMBOL)
        gv.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(raw)), raw)
        gv.global_constant = True

    # ------------------------------------------------------------------ statements
    def stmt(self, s) -> None:
        handler = getattr(self, f"_s_{type(s).__name__.lower()}", None)
        if handler is None:
            raise ValueError(f"the LLVM backend cannot emit statement {type(s).__name__}: {s!r}")
        handler(s)

    def _s_seqstmt(self, s: tir.SeqStmt) -> None:
        for x in s.stmts:
            self.stmt(x)

    def _s_attrstmt(self, s: tir.AttrStmt) -> None:
        self.stmt(s.body)

    def _s_evaluate(self, s: tir.Evaluate) -> None:
        self.expr(s.value)

    def _s_letstmt(self, s: tir.LetStmt) -> None:
        outer = self.env.get(s.var)
        self.env[s.var] = self.expr(s.value)
        self.stmt(s.body)
        if outer is None:
            del self.env[s.var]
        else:
            self.env[s.var] = outer

    def _s_ifthenelse(self, s: tir.IfThenElse) -> None:
        cond = materialize(self.builder, self.expr(s.cond))
        if lanes_of(cond) != 1:
            raise ValueError(f"IfThenElse needs a scalar condition, not {s.cond.dtype} ({s.cond})")
        if s.else_case is None:
            with self.builder.if_then(cond):
                self.stmt(s.then_case)
            return
        with self.builder.if_else(cond) as (then, otherwise):
            with then:
                self.stmt(s.then_case)
            with otherwise:
                self.stmt(s.else_case)

    def _s_store(self, s: tir.Store) -> None:
        buffer = s.buffer
        st = scalar_type(buffer.dtype)
        if len(s.indices) != 1:
            raise ValueError(f"store to {buffer.name!r} has {len(s.indices)} indices; code "
                             "generation needs one flat index (run compiler.tir.lower)")
        index = self.expr(s.indices[0])
        value = materialize(self.builder, self.expr(s.value))
        if isinstance(index, Ramp) and index.stride == 0 and lanes_of(value) == 1:
            index = index.base
        lanes = lanes_of(index)
        value = broadcast(self.builder, value, lanes)
        if lanes_of(value) != lanes:
            raise ValueError(f"store to {buffer.name!r}: value has {lanes_of(value)} lanes but the "
                             f"index has {lanes} ({s!r})")
        value = self.to_mem(value, st)
        bld = self.builder
        if lanes == 1 or (isinstance(index, Ramp) and index.stride == 1):
            base = index.base if isinstance(index, Ramp) else index
            bld.store(value, self.address(buffer, base)).align = st.nbytes
            return
        for i, idx in enumerate(extract_lanes(bld, index, lanes)):   # scatter
            lane = bld.extract_element(value, ir.Constant(I32, i))
            bld.store(lane, self.address(buffer, idx)).align = st.nbytes

    def _s_allocate(self, s: tir.Allocate) -> None:
        buffer = s.buffer
        st = scalar_type(buffer.dtype)
        nbytes = max(1, buffer.size) * st.nbytes
        if nbytes <= MAX_STACK_BYTES:
            slot = ir.IRBuilder(self.entry)
            slot.position_at_start(self.entry)
            ptr = slot.alloca(ir.ArrayType(st.mem(), max(1, buffer.size)), name=buffer.name)
            ptr.align = ALIGN
            ptr.type = PTR    # opaque pointer, as every other address
            self._with_buffer(buffer, ptr, s.body)
            return
        size = ir.Constant(I64, (nbytes + ALIGN - 1) // ALIGN * ALIGN)
        ptr = self.builder.call(self._libc("aligned_alloc", PTR, [I64, I64]),
                                [ir.Constant(I64, ALIGN), size], name=buffer.name)
        self._with_buffer(buffer, ptr, s.body)
        self.builder.call(self._libc("free", ir.VoidType(), [PTR]), [ptr])

    def _with_buffer(self, buffer, ptr, body) -> None:
        outer = self.buffers.get(buffer)
        self.buffers[buffer] = ptr
        self.stmt(body)
        if outer is None:
            del self.buffers[buffer]
        else:
            self.buffers[buffer] = outer

    def _libc(self, name: str, ret: ir.Type, args: "list[ir.Type]") -> ir.Function:
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    # ------------------------------------------------------------------ loops
    def _s_for(self, s: tir.For) -> None:
        if s.thread is not None:
            raise ValueError(f"loop {s.var.name!r} is bound to thread axis {s.thread!r}; the LLVM "
                             "CPU backend has no thread axes (use parallel instead of bind)")
        extent = s.extent.arg if s.extent.op is Op.CONST else None
        if s.kind is ForKind.PARALLEL and self.target.has_threads and not self.in_parallel \
                and par.stored_elements(s) >= par.MIN_PARALLEL_WORK:
            return self._parallel_for(s)
        if s.kind is ForKind.VECTORIZED and extent is not None and _vectorizable(s.body, s.var):
            return self._vector_for(s, extent)
        if s.kind is ForKind.UNROLLED and extent is not None and extent <= MAX_UNROLL:
            lo = materialize(self.builder, self.expr(s.min))
            for i in range(extent):
                self._bind_and_emit(s.var, self.builder.add(lo, ir.Constant(lo.type, i)), s.body)
            return
        lo = materialize(self.builder, self.expr(s.min))
        hi = self.builder.add(lo, materialize(self.builder, self.expr(s.extent)))
        counted_loop(self.builder, lo, hi, s.var.name,
                     lambda iv: self._bind_and_emit(s.var, iv, s.body))

    def _bind_and_emit(self, var, value, body) -> None:
        outer = self.env.get(var)
        self.env[var] = value
        self.stmt(body)
        if outer is None:
            del self.env[var]
        else:
            self.env[var] = outer

    def _vector_for(self, s: tir.For, extent: int) -> None:
        lo = materialize(self.builder, self.expr(s.min))
        start = 0
        while start < extent:
            lanes = min(MAX_VECTOR_LANES, extent - start)
            base = self.builder.add(lo, ir.Constant(lo.type, start))
            self._bind_and_emit(s.var, Ramp(base, 1, lanes) if lanes > 1 else base, s.body)
            start += lanes

    def _parallel_for(self, s: tir.For) -> None:
        """Outline the loop body and run it on the OpenMP pool (see parallel.py)."""
        bld = self.builder
        lo = materialize(bld, self.expr(s.min))
        extent = bld.sext(materialize(bld, self.expr(s.extent)), I64) \
            if scalar_type(s.extent.dtype).bits < 64 else materialize(bld, self.expr(s.extent))
        env_keys = list(self.env)
        buf_keys = list(self.buffers)
        slot = ir.IRBuilder(self.entry)
        slot.position_at_start(self.entry)
        counter = slot.alloca(I64, name="next_chunk")
        counter.type = PTR
        bld.store(ir.Constant(I64, 0), counter)
        values = [self.env[k] for k in env_keys] + [self.buffers[k] for k in buf_keys] + \
            [lo, extent, counter]
        if any(isinstance(v, Ramp) for v in values):
            raise ValueError(f"parallel loop {s.var.name!r} inside a vectorized loop")
        struct = ir.LiteralStructType([v.type for v in values])

        self._outlined += 1
        body_fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR]),
                              name=f"{self.fn.name}.parallel{self._outlined}")
        body_fn.linkage = "internal"

        closure = slot.alloca(struct, name="closure")
        closure.type = PTR
        par.pack_closure(bld, closure, struct, values)
        par.call_parallel(bld, self.module, body_fn, closure)

        saved = (self.fn, self.builder, self.entry, self.env, self.buffers, self.in_parallel)
        self._begin(body_fn)
        loaded = par.unpack_closure(self.builder, body_fn.args[0], struct)
        self.env = dict(zip(env_keys, loaded))
        self.buffers = dict(zip(buf_keys, loaded[len(env_keys):]))
        self.in_parallel = True
        lo_in, n_in, counter_in = loaded[-3:]
        ity = lo_in.type

        def chunk(first, last):
            first = self.builder.add(lo_in, self._int_cast(first, ity))
            last = self.builder.add(lo_in, self._int_cast(last, ity))
            counted_loop(self.builder, first, last, s.var.name,
                         lambda iv: self._bind_and_emit(s.var, iv, s.body))
        if self.schedule == "dynamic":
            par.dynamic_chunks(self.builder, self.module, counter_in, n_in, chunk)
        else:
            chunk(*par.static_chunk(self.builder, self.module, n_in))
        self.builder.ret_void()
        self.fn, self.builder, self.entry, self.env, self.buffers, self.in_parallel = saved

    def _int_cast(self, x: ir.Value, ty: ir.Type) -> ir.Value:
        if x.type.width == ty.width:
            return x
        return self.builder.trunc(x, ty) if x.type.width > ty.width else self.builder.sext(x, ty)


def _vectorizable(body, var) -> bool:
    """Bodies the in-codegen vectoriser handles: stores whose index uses ``var``, lets, sequences."""
    if isinstance(body, tir.SeqStmt):
        return all(_vectorizable(x, var) for x in body.stmts)
    if isinstance(body, (tir.LetStmt, tir.AttrStmt)):
        return _vectorizable(body.body, var)
    return isinstance(body, tir.Store) and _uses(body.indices[0], var)


def _uses(e, var) -> bool:
    return e == var or any(_uses(x, var) for x in e.src)
