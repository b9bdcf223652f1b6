"""A C-like kernel printer over lowered tir PrimFuncs, shared by the CUDA and OpenCL backends.

`CSourcePrinter.print(func)` turns one PrimFunc in the flat post-lowering form
(see `compiler.tir.ir`) into the source of one GPU kernel plus its launch
configuration (`KernelSource`). Subclasses (`codegen.cuda.CUDAPrinter`,
`codegen.opencl.OpenCLPrinter`) declare the target's spelling: thread indices,
address-space qualifiers, barriers, vector types and loads, math functions.

What the printer does with the GPU forms:
- a For bound to "blockIdx.x" ... "threadIdx.z" prints no loop: its variable is
  the thread index (plus the loop's min). The launch size of an axis is the
  largest constant extent bound to it; a loop narrower than that is guarded
  (`if (threadIdx.x < extent)`).
- Allocate in scope "shared" becomes a block-shared array hoisted to the top of
  the kernel (__shared__ / __local, once per buffer), 16-byte aligned; scope "local" becomes a
  per-thread array that the device compiler keeps in registers when its
  indices are constants after unrolling (loops of kind UNROLLED, and
  VECTORIZED ones that remain, print `#pragma unroll`).
- barriers are `Evaluate(CALL "storage_sync")`; `gpu_barriers.insert_barriers`
  places them (the backends run it before printing unless told not to).
- a vector LOAD/Store whose index is RAMP(base, 1, lanes) is one vector access
  (float4: 16 bytes) when the target can do it; CUDA needs the base to be a
  provable multiple of the lanes (every term and the constant of the base's
  linear form divisible by the lanes; buffers are 16-byte aligned), otherwise
  it falls back to per-lane scalar accesses.
- float16 is a storage type: a load from a float16 buffer gives a float32
  value, a store converts back (round to nearest even), and float16 arithmetic
  is computed in float32; "local" float16 buffers are float registers. This is
  what fp16 storage with fp32 accumulation
  needs, and it runs on devices without half arithmetic (PoCL on x86).
- FLOORDIV/FLOORMOD by a power of two print as shifts/masks (exact floor
  semantics for negative values too); by other constants as / and % when the
  dividend is provably non-negative, else through floor helpers.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.bounds import const_bounds
from compiler.tir.ops import ForKind, Op
from compiler.tir.simplify import linear
from compiler.tir.visit import substitute, walk_stmt
from compiler.tir.passes.gpu_barriers import BARRIER_CALL, insert_barriers, thread_extents

_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.EQ: "==", Op.NE: "!=",
          Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=", Op.AND: "&&", Op.OR: "||"}
_LANE_NAMES = "xyzw"


@dataclass(frozen=True)
class LaunchConfig:
    """Grid (blocks per axis) and block (threads per axis) sizes, each (x, y, z)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def global_size(self) -> tuple[int, int, int]:
        """OpenCL's NDRange: grid * block per axis, in work-items."""
        return tuple(g * b for g, b in zip(self.grid, self.block))


@dataclass(frozen=True)
class KernelSource:
    """The printed kernel: entry `name`, source `code`, `launch` sizes, `params` in order,
    `shared_bytes` of static shared memory per block."""

    name: str
    code: str
    launch: LaunchConfig
    params: tuple
    shared_bytes: int
    target: str


def launch_config(func: ir.PrimFunc) -> LaunchConfig:
    """Grid and block sizes from the thread-bound loops of `func` (1 for unbound axes)."""
    ext = thread_extents(func.body)
    grid = tuple(ext.get(f"blockIdx.{a}", 1) for a in "xyz")
    block = tuple(ext.get(f"threadIdx.{a}", 1) for a in "xyz")
    return LaunchConfig(grid, block)


def _aligned(base: ir.Expr, lanes: int) -> bool:
    """base is a multiple of `lanes` for every value of its variables."""
    terms, c = linear(base)
    return c % lanes == 0 and all(k % lanes == 0 for k in terms.values())


@dataclass
class _State:
    lines: list = field(default_factory=list)
    names: dict = field(default_factory=dict)       # VAR Expr -> C name
    used: set = field(default_factory=set)
    ranges: dict = field(default_factory=dict)      # VAR -> (lo, hi)
    helpers: dict = field(default_factory=dict)     # name -> definition (ordered)
    stored: set = field(default_factory=set)        # Buffers written
    tmp: int = 0


class CSourcePrinter(ABC):
    """Base printer. Subclasses fill in the target hooks (methods below `# hooks`)."""

    target = "c"
    vector_lanes = (2, 4)          # vector widths the target has types for

    def __init__(self, barriers: bool = True):
        self.barriers = barriers

    # ------------------------------------------------------------ entry

    def print(self, func: ir.PrimFunc) -> KernelSource:
        if self.barriers:
            func = insert_barriers(func)
        self.func = func
        self.launch = launch_config(func)
        self.ext = thread_extents(func.body)
        st = self.st = _State()
        for p in func.params:
            self._name(p.name if isinstance(p, ir.Buffer) else p)
        st.stored = {s.buffer for s in walk_stmt(func.body) if isinstance(s, ir.Store)}
        shared = list(dict.fromkeys(s.buffer for s in walk_stmt(func.body)
                                    if isinstance(s, ir.Allocate) and s.buffer.scope == "shared"))
        self.shared = shared
        body_lines = st.lines
        for b in shared:
            body_lines.append("  " + self.shared_decl(b, self._name(b.name)))
        self.stmt(func.body, 1)
        params = ", ".join(self.param_decl(p) for p in func.params)
        head = self.kernel_head(func.name, params)
        helpers = "".join(v + "\n" for v in st.helpers.values())
        self.kernel_text = head + " {\n" + "\n".join(body_lines) + "\n}\n"
        code = self.prelude() + helpers + self.kernel_text
        shared_bytes = sum(b.size * self.storage_bytes(b) for b in shared)
        return KernelSource(func.name, code, self.launch, tuple(func.params), shared_bytes,
                            self.target)

    # ------------------------------------------------------------ names

    def _name(self, key) -> str:
        st = self.st
        if key in st.names:
            return st.names[key]
        raw = key if isinstance(key, str) else key.name
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in raw) or "v"
        if base[0].isdigit() or base in self.reserved():
            base = "v_" + base
        name, k = base, 1
        while name in st.used:
            name, k = f"{base}_{k}", k + 1
        st.used.add(name)
        st.names[key] = name
        return name

    def reserved(self) -> set:
        return {"int", "float", "half", "double", "char", "short", "long", "bool", "void", "for",
                "if", "else", "while", "do", "return", "const", "restrict", "signed", "unsigned",
                "threadIdx", "blockIdx", "blockDim", "gridDim", "min", "max", "exp", "log"}

    def buffer_name(self, b: ir.Buffer) -> str:
        return self._name(b.name)

    # ------------------------------------------------------------ statements

    def emit(self, line: str, depth: int):
        self.st.lines.append("  " * depth + line)

    def stmt(self, s: ir.Stmt, d: int):
        if isinstance(s, ir.SeqStmt):
            for c in s.stmts:
                self.stmt(c, d)
        elif isinstance(s, ir.For):
            self.for_(s, d)
        elif isinstance(s, ir.Store):
            self.store(s, d)
        elif isinstance(s, ir.Allocate):
            b = s.buffer
            if b.scope == "shared":
                pass  # hoisted to the kernel's top
            elif b.scope == "local" or b.scope.startswith("local"):
                # a block of its own: loop partitioning may allocate one buffer in sibling scopes
                self.emit("{", d)
                self.emit(self.local_decl(b, self._name(b.name)), d + 1)
                self.stmt(s.body, d + 1)
                self.emit("}", d)
                return
            else:
                raise ValueError(f"buffer {b.name!r} has scope {b.scope!r}; a GPU kernel can "
                                 "allocate 'shared' or 'local' buffers only")
            self.stmt(s.body, d)
        elif isinstance(s, ir.IfThenElse):
            self.emit(f"if ({self.expr(s.cond)}) {{", d)
            self.stmt(s.then_case, d + 1)
            if s.else_case is not None:
                self.emit("} else {", d)
                self.stmt(s.else_case, d + 1)
            self.emit("}", d)
        elif isinstance(s, ir.LetStmt):
            self.emit(f"{self.value_type(s.var.dtype)} {self._name(s.var)} = {self.expr(s.value)};", d)
            self.stmt(s.body, d)
        elif isinstance(s, ir.Evaluate):
            v = s.value
            if v.op is Op.CALL and v.arg == BARRIER_CALL:
                self.emit(self.barrier() + ";", d)
            elif v.op is Op.CONST:
                pass
            else:
                self.emit(self.expr(v) + ";", d)
        elif isinstance(s, ir.AttrStmt):
            self.emit(f"// {s.key} = {s.value}", d)
            self.stmt(s.body, d)
        else:
            raise TypeError(f"not a statement: {s!r}")

    def for_(self, s: ir.For, d: int):
        v = self._name(s.var)
        if s.thread is not None:
            n = s.extent.value
            idx = self.thread_index(s.thread)
            lo = self.expr(s.min)
            self.st.ranges[s.var] = self._shift((0, n - 1), s.min)
            self.emit(f"int {v} = {idx}" + ("" if ir.is_const(s.min, 0) else f" + {lo}") + ";", d)
            if n < self.ext[s.thread]:
                self.emit(f"if ({idx} < {n}) {{", d)
                self.stmt(s.body, d + 1)
                self.emit("}", d)
            else:
                self.stmt(s.body, d)
            return
        if s.kind is ForKind.PARALLEL:
            raise ValueError(f"loop {s.var} is PARALLEL, which has no meaning inside a GPU kernel; "
                             "bind it to a thread axis instead")
        if s.min.op is Op.CONST and s.extent.op is Op.CONST:
            self.st.ranges[s.var] = (s.min.value, s.min.value + s.extent.value - 1)
        lo = self.expr(s.min)
        hi = self.expr(ir.Expr(Op.ADD, s.min.dtype, (s.min, s.extent))) if not ir.is_const(s.min, 0) \
            else self.expr(s.extent)
        if s.min.op is Op.CONST and s.extent.op is Op.CONST:
            hi = str(s.min.value + s.extent.value)
        if s.kind in (ForKind.UNROLLED, ForKind.VECTORIZED):
            self.emit("#pragma unroll", d)
        self.emit(f"for (int {v} = {lo}; {v} < {hi}; ++{v}) {{", d)
        self.stmt(s.body, d + 1)
        self.emit("}", d)

    def _shift(self, r, m: ir.Expr):
        if m.op is Op.CONST:
            return (r[0] + m.value, r[1] + m.value)
        lo, hi = const_bounds(m, self.st.ranges)
        return (r[0] + lo, r[1] + hi)

    def store(self, s: ir.Store, d: int):
        b = s.buffer
        if len(s.indices) != 1:
            raise ValueError(f"store to {b.name!r} has {len(s.indices)} indices; GPU code "
                             "generation needs the flat form (run compiler.tir.lower first)")
        idx = s.indices[0]
        lanes = dt.lanes(s.value.dtype)
        name = self.buffer_name(b)
        if lanes == 1:
            self.emit(self.scalar_store(b, name, self.expr(idx), self.expr(s.value)) + ";", d)
            return
        self._check_vector(b, lanes)
        val = self.expr(s.value)
        if idx.op is Op.RAMP and ir.is_const(idx.src[1], 1):
            base = idx.src[0]
            code = self.vector_store(b, name, self.expr(base), val, lanes,
                                     _aligned(base, lanes) and b.scope != "local")
            if code is not None:
                self.emit(code + ";", d)
                return
        # per-lane scatter
        t = self._tmp()
        self.emit(f"{{ {self.value_type(s.value.dtype)} {t} = {val};", d)
        for i, li in enumerate(self._lane_indices(idx, lanes)):
            self.emit("  " + self.scalar_store(b, name, li, self.lane(t, i, lanes)) + ";", d)
        self.emit("}", d)

    def _tmp(self) -> str:
        self.st.tmp += 1
        return f"_t{self.st.tmp}"

    def _lane_indices(self, idx: ir.Expr, lanes: int) -> list[str]:
        if idx.op is Op.RAMP:
            base, stride = idx.src
            return [self.expr(base) if i == 0 else
                    self.expr(ir.Expr(Op.ADD, base.dtype, (base, ir.Expr(Op.MUL, base.dtype, (
                        stride, ir.const(i, base.dtype)))))) for i in range(lanes)]
        if idx.op is Op.BROADCAST:
            return [self.expr(idx.src[0])] * lanes
        raise ValueError(f"vector index {idx} must be a RAMP or BROADCAST for GPU code generation")

    def _check_vector(self, b: ir.Buffer, lanes: int):
        if dt.element(b.dtype) == "float16":
            raise ValueError(f"vector access of {lanes} lanes to float16 buffer {b.name!r}: float16 "
                             "is a storage type here; load scalars and cast to float32")
        if lanes not in self.vector_lanes:
            raise ValueError(f"vector of {lanes} lanes on buffer {b.name!r}: the {self.target} "
                             f"backend has vector types of {self.vector_lanes} lanes; split the "
                             "vectorized loop to one of those")

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> str:
        op = e.op
        if op is Op.CONST:
            return self.const(e.value, e.dtype)
        if op is Op.VAR:
            if e not in self.st.names:
                raise ValueError(f"variable {e.name!r} is used but neither a parameter nor bound "
                                 f"by a loop or let in {self.func.name}")
            return self.st.names[e]
        if op in (Op.FLOORDIV, Op.FLOORMOD):
            return self.floordivmod(e)
        if op in _INFIX:
            a, b = e.src
            if dt.lanes(e.dtype) > 1 or dt.lanes(a.dtype) > 1:
                return self.vector_binary(op, e, self.expr(a), self.expr(b))
            return f"({self.expr(a)} {_INFIX[op]} {self.expr(b)})"
        if op in (Op.MIN, Op.MAX):
            a, b = e.src
            if dt.lanes(e.dtype) > 1:
                return self.vector_binary(op, e, self.expr(a), self.expr(b))
            return self.minmax(op, e.dtype, self.expr(a), self.expr(b))
        if op is Op.NOT:
            return f"(!{self.expr(e.src[0])})"
        if op is Op.SELECT:
            if dt.lanes(e.dtype) > 1:
                raise ValueError(f"vector select {e} is not supported by the {self.target} printer")
            c, a, b = (self.expr(x) for x in e.src)
            return f"({c} ? {a} : {b})"
        if op is Op.CAST:
            return self.cast(e.src[0], e.dtype)
        if op is Op.CALL:
            return self.call(e)
        if op is Op.LET:
            v, value, body = e.src
            return self.expr(substitute(body, {v: value}))
        if op is Op.LOAD:
            return self.load(e)
        if op is Op.RAMP:
            base, stride = e.src
            parts = self._lane_indices(e, e.arg)
            return self.make_vector(e.dtype, parts)
        if op is Op.BROADCAST:
            return self.broadcast(e.dtype, self.expr(e.src[0]))
        raise ValueError(f"expression {e} ({op.name}) cannot be printed for {self.target}; "
                         "lower the function first")

    def floordivmod(self, e: ir.Expr) -> str:
        a, b = e.src
        sa = self.expr(a)
        if b.op is Op.CONST and b.value > 0:
            c = b.value
            if c & (c - 1) == 0:
                sh = c.bit_length() - 1
                return f"({sa} >> {sh})" if e.op is Op.FLOORDIV else f"({sa} & {c - 1})"
            lo, _ = const_bounds(a, self.st.ranges)
            if lo >= 0:
                return f"({sa} {'/' if e.op is Op.FLOORDIV else '%'} {c})"
        t = self.value_type(e.dtype)
        name = f"floor{'div' if e.op is Op.FLOORDIV else 'mod'}_{t.replace(' ', '_')}"
        if e.op is Op.FLOORDIV:
            body = "{ " + t + " q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }"
        else:
            body = "{ " + t + " r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }"
        self.st.helpers.setdefault(name, f"{self.helper_prefix()}{t} {name}({t} a, {t} b) {body}")
        return f"{name}({sa}, {self.expr(b)})"

    def load(self, e: ir.Expr) -> str:
        b: ir.Buffer = e.arg
        if len(e.src) != 1:
            raise ValueError(f"load from {b.name!r} has {len(e.src)} indices; GPU code generation "
                             "needs the flat form (run compiler.tir.lower first)")
        idx = e.src[0]
        name = self.buffer_name(b)
        lanes = dt.lanes(e.dtype)
        if lanes == 1:
            return self.scalar_load(b, name, self.expr(idx))
        self._check_vector(b, lanes)
        if idx.op is Op.RAMP and ir.is_const(idx.src[1], 1):
            base = idx.src[0]
            code = self.vector_load(b, name, self.expr(base), lanes,
                                    _aligned(base, lanes) and b.scope != "local")
            if code is not None:
                return code
        return self.make_vector(e.dtype, [self.scalar_load(b, name, i)
                                          for i in self._lane_indices(idx, lanes)])

    def call(self, e: ir.Expr) -> str:
        name = e.arg
        if name == "address_of":
            ld = e.src[0]
            return f"(&{self.buffer_name(ld.arg)}[{self.expr(ld.src[0])}])"
        if dt.lanes(e.dtype) > 1:
            raise ValueError(f"vector call {name} ({e.dtype}) is not supported by the "
                             f"{self.target} printer; scalarize it")
        args = [self.expr(a) for a in e.src]
        if name == "sigmoid":
            one = self.const(1.0, e.dtype)
            return f"({one} / ({one} + {self.math('exp', e.dtype)}(-{args[0]})))"
        return f"{self.math(name, e.dtype)}({', '.join(args)})"

    def const(self, v, dtype: str) -> str:
        if dt.is_bool(dtype):
            return "true" if v else "false"
        if dt.is_int(dtype):
            return self.int_const(int(v), dtype)
        v = float(v)
        if math.isinf(v) or math.isnan(v):
            return self.special_float(v, dtype)
        text = repr(v)
        if dt.element(dtype) == "float64":
            return text
        return f"{text}f"

    def int_const(self, v: int, dtype: str) -> str:
        if dt.element(dtype) in ("int64", "uint64"):
            return f"{v}L"
        if dt.element(dtype) == "int32" and v == -2 ** 31:
            return "(-2147483647 - 1)"
        return str(v) if v >= 0 else f"({v})"

    def cast(self, x: ir.Expr, dtype: str) -> str:
        src = self.expr(x)
        if dt.lanes(dtype) > 1:
            return self.vector_cast(x, dtype, src)
        if dt.is_bool(dtype):
            return f"({src} != 0)"
        if self.value_type(x.dtype) == self.value_type(dtype):
            return src   # float16 <-> float32: both are float in registers
        return f"(({self.value_type(dtype)}){src})"

    # ------------------------------------------------------------ types

    def scalar_c_type(self, elem: str) -> str:
        return {"float32": "float", "float64": "double", "float16": "float", "int8": "signed char",
                "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
                "int32": "int", "uint32": "unsigned int", "int64": "long long",
                "uint64": "unsigned long long", "bool": "bool", "handle": "void*"}[elem]

    def value_type(self, dtype: str) -> str:
        """The C type of a value of `dtype` in registers (float16 values are float)."""
        elem, lanes = dt.split_lanes(dtype)
        t = self.scalar_c_type(elem)
        if lanes == 1:
            return t
        if elem == "bool" or t.startswith(("signed", "unsigned", "long")) or " " in t:
            raise ValueError(f"vector dtype {dtype} has no {self.target} vector type here")
        return f"{t}{lanes}"

    def storage_type(self, elem: str) -> str:
        """The C type of one element in memory."""
        return self.scalar_c_type(elem)

    def storage_bytes(self, b: ir.Buffer) -> int:
        """Bytes of one element of `b` as this target declares it."""
        t = self.storage_type(dt.element(b.dtype)) if b.scope == "global" else None
        if dt.element(b.dtype) == "bool":
            return 1
        if dt.element(b.dtype) == "float16" and t is None and self.shared_half_as_float():
            return 4
        return dt.to_numpy(b.dtype).itemsize

    def shared_half_as_float(self) -> bool:
        """Whether float16 shared buffers are declared as float (OpenCL without cl_khr_fp16)."""
        return False

    def lane(self, value: str, i: int, lanes: int) -> str:
        return f"{value}.{_LANE_NAMES[i]}" if lanes <= 4 else f"{value}.s{i:x}"

    # ------------------------------------------------------------ hooks

    def prelude(self) -> str:
        return ""

    def helper_prefix(self) -> str:
        return "static inline "

    @abstractmethod
    def kernel_head(self, name: str, params: str) -> str:
        """Target hook."""

    @abstractmethod
    def param_decl(self, p) -> str:
        """Target hook."""

    @abstractmethod
    def thread_index(self, axis: str) -> str:
        """Target hook."""

    @abstractmethod
    def barrier(self) -> str:
        """Target hook."""

    @abstractmethod
    def shared_decl(self, b: ir.Buffer, name: str) -> str:
        """Target hook."""

    def local_decl(self, b: ir.Buffer, name: str) -> str:
        return f"{self.storage_type(dt.element(b.dtype))} {name}[{max(b.size, 1)}];"

    def scalar_load(self, b: ir.Buffer, name: str, idx: str) -> str:
        return f"{name}[{idx}]"

    def scalar_store(self, b: ir.Buffer, name: str, idx: str, value: str) -> str:
        return f"{name}[{idx}] = {value}"

    def vector_load(self, b, name, base: str, lanes: int, aligned: bool) -> str | None:
        return None

    def vector_store(self, b, name, base: str, value: str, lanes: int, aligned: bool) -> str | None:
        return None

    @abstractmethod
    def make_vector(self, dtype: str, parts: list[str]) -> str:
        """Target hook."""

    @abstractmethod
    def broadcast(self, dtype: str, value: str) -> str:
        """Target hook."""

    @abstractmethod
    def vector_binary(self, op: Op, e: ir.Expr, a: str, b: str) -> str:
        """Target hook."""

    def vector_cast(self, x: ir.Expr, dtype: str, src: str) -> str:
        raise ValueError(f"vector cast to {dtype} is not supported by the {self.target} printer")

    @abstractmethod
    def minmax(self, op: Op, dtype: str, a: str, b: str) -> str:
        """Target hook."""

    @abstractmethod
    def math(self, name: str, dtype: str) -> str:
        """Target hook."""

    @abstractmethod
    def special_float(self, v: float, dtype: str) -> str:
        """Target hook."""


def print_module(printer_cls, funcs, barriers: bool = True) -> tuple[str, list[KernelSource]]:
    """Several kernels in one source (one compilation): the prelude and helper functions once,
    then every kernel. Returns (source, [KernelSource per func]); kernel names must differ.

    Raises ValueError on a repeated kernel name or two helpers of one name that differ.
    """
    helpers: dict = {}
    kernels, texts = [], []
    for f in funcs:
        p = printer_cls(barriers=barriers)
        ks = p.print(f)
        if any(k.name == ks.name for k in kernels):
            raise ValueError(f"kernel name {ks.name!r} appears twice in one module")
        for name, text in p.st.helpers.items():
            if helpers.setdefault(name, text) != text:
                raise ValueError(f"helper {name!r} has two definitions in one module")
        kernels.append(ks)
        texts.append(p.kernel_text)
        prelude = p.prelude()
    if not kernels:
        return "", []
    code = prelude + "".join(v + "\n" for v in helpers.values()) + "\n".join(texts)
    return code, kernels
