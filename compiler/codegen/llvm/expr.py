"""Expressions of the loop IR to LLVM IR (the expression half of the LLVM backend).

:class:`ExprEmitter` turns one ``compiler.tir.ir.Expr`` into an LLVM value at
the current builder position. Values are LLVM scalars, LLVM vectors, or
:class:`~compiler.codegen.llvm.vector.Ramp` (an affine vector index kept
symbolic so that loads and stores become contiguous vector accesses). A
scalar where a vector is expected stands for its broadcast.

Semantics (the loop IR's, see ``compiler/tir/ir.py``):

* integer ADD/SUB/MUL wrap (two's complement, as numpy) for 8/16-bit and
  unsigned ints; on int32/int64 they carry ``nsw`` (as TVM's LLVM backend:
  overflow there is undefined, so index arithmetic optimises); FLOORDIV/FLOORMOD
  round toward -inf like Python; DIV is float division.
* float arithmetic is strict IEEE by default (no fast-math flags). With
  ``fp_contract`` only ``contract`` is set, letting LLVM fuse ``a*b + c``
  into one FMA as C compilers do by default (``-ffp-contract``).
* float MIN/MAX are ``a < b ? a : b`` (x86 ``minps`` semantics on NaN).
* comparisons are ordered except NE (true when either side is NaN), as C.

Errors: ``ValueError`` naming the node for an unbound variable, an op the
backend does not support, or DIV on integers.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.codegen.llvm.dtypes import ScalarType, scalar_type, vec
from compiler.codegen.llvm import intrin_x86
from compiler.codegen.llvm.intrinsics import call_math
from compiler.codegen.llvm.vector import Ramp, broadcast, extract_lanes, lanes_of, materialize, pack_lanes
from compiler.tir.ir import Expr
from compiler.tir.ops import Op

#: vector loads (any lane count, e.g. a 28-column row) stepping by 2..this many elements are one
#: contiguous load and a shuffle; others load lane by lane
STRIDED_LOAD_MAX = 4

_ICMP = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}


def _const_int(value) -> "int | None":
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) \
            and isinstance(value.constant, int):
        return value.constant
    return None


class ExprEmitter:
    """Mixin: needs ``self.builder``, ``self.module``, ``self.env`` (VAR Expr -> value),
    ``self.buffers`` (Buffer -> pointer) and ``self.fp_contract``."""

    # ------------------------------------------------------------------ entry
    def expr(self, e: Expr):
        """The LLVM value (or Ramp) of expression ``e``."""
        handler = getattr(self, f"_e_{e.op.name.lower()}", None)
        if handler is None:
            raise ValueError(f"the LLVM backend cannot emit {e.op.name} expressions ({e}); "
                             "lower the function with compiler.tir.lower first")
        return handler(e)

    def value(self, e: Expr, lanes: int = 1) -> ir.Value:
        """``expr(e)`` as a plain LLVM value, broadcast to ``lanes`` if scalar."""
        return broadcast(self.builder, materialize(self.builder, self.expr(e)), lanes)

    # ------------------------------------------------------------------ leaves
    def _e_const(self, e: Expr):
        st = scalar_type(e.dtype)
        value = e.arg
        if st.is_float:
            value = float(value)
        elif st.is_bool:
            value = int(bool(value))
        else:
            value = int(value) & ((1 << st.bits) - 1)    # the bit pattern, written signed
            if value >= 1 << (st.bits - 1):
                value -= 1 << st.bits
        return ir.Constant(st.reg(), value)

    def _e_var(self, e: Expr):
        try:
            return self.env[e]
        except KeyError:
            raise ValueError(f"variable {e.name!r} ({e.dtype}) is used but not bound: it is not a "
                             "parameter, loop variable or let variable in scope") from None

    # ------------------------------------------------------------------ arithmetic
    def _e_add(self, e):
        return self._arith(e)

    _e_sub = _e_mul = _e_div = _e_floordiv = _e_floormod = _e_min = _e_max = _e_add

    def _arith(self, e: Expr):
        a, b = self.expr(e.src[0]), self.expr(e.src[1])
        st = scalar_type(e.src[0].dtype)
        ramp = self._ramp_arith(e.op, a, b)
        if ramp is not None:
            return ramp
        a, b = self._same_lanes(a, b)
        bld = self.builder
        if st.is_float:
            flags = ["contract"] if self.fp_contract else []
            if e.op is Op.ADD:
                return bld.fadd(a, b, flags=flags)
            if e.op is Op.SUB:
                return bld.fsub(a, b, flags=flags)
            if e.op is Op.MUL:
                return bld.fmul(a, b, flags=flags)
            if e.op is Op.DIV:
                return bld.fdiv(a, b)
            if e.op in (Op.MIN, Op.MAX):
                return bld.select(bld.fcmp_ordered("<" if e.op is Op.MIN else ">", a, b), a, b)
        else:
            # nsw on signed 32/64-bit ints, as TVM: index arithmetic must not overflow, and
            # nsw lets LLVM widen induction variables; narrower ints wrap like numpy's.
            wrap = ["nsw"] if st.is_signed and st.bits >= 32 else []
            if e.op is Op.ADD:
                return bld.add(a, b, flags=wrap)
            if e.op is Op.SUB:
                return bld.sub(a, b, flags=wrap)
            if e.op is Op.MUL:
                return bld.mul(a, b, flags=wrap)
            if e.op in (Op.MIN, Op.MAX):
                cmp = bld.icmp_signed if st.is_signed else bld.icmp_unsigned
                return bld.select(cmp("<" if e.op is Op.MIN else ">", a, b), a, b)
            if e.op is Op.FLOORDIV:
                return self._floordiv(a, b, st)
            if e.op is Op.FLOORMOD:
                return self._floormod(a, b, st)
        raise ValueError(f"{e.op.name} is not defined on {e.src[0].dtype} ({e}); DIV is float "
                         "division, FLOORDIV/FLOORMOD are integer ops")

    def _ramp_arith(self, op: Op, a, b):
        """Keep ``Ramp op scalar`` affine where possible; None when it must be materialised."""
        if not isinstance(a, Ramp) and not isinstance(b, Ramp):
            return None
        bld = self.builder
        if isinstance(a, Ramp) and isinstance(b, Ramp) and a.lanes == b.lanes:
            if op is Op.ADD:
                return Ramp(bld.add(a.base, b.base), a.stride + b.stride, a.lanes)
            if op is Op.SUB:
                return Ramp(bld.sub(a.base, b.base), a.stride - b.stride, a.lanes)
            return None
        if lanes_of(a) > 1 and lanes_of(b) > 1:
            return None    # a Ramp with a general vector
        if op is Op.ADD:
            r, s = (a, b) if isinstance(a, Ramp) else (b, a)
            return Ramp(bld.add(r.base, s), r.stride, r.lanes)
        if op is Op.SUB:
            if isinstance(a, Ramp):
                return Ramp(bld.sub(a.base, b), a.stride, a.lanes)
            return Ramp(bld.sub(a, b.base), -b.stride, b.lanes)
        if op is Op.MUL:
            r, s = (a, b) if isinstance(a, Ramp) else (b, a)
            c = _const_int(s)
            if c is not None:
                return Ramp(bld.mul(r.base, s), r.stride * c, r.lanes)
        return None

    def _same_lanes(self, a, b):
        a, b = materialize(self.builder, a), materialize(self.builder, b)
        n = max(lanes_of(a), lanes_of(b))
        return broadcast(self.builder, a, n), broadcast(self.builder, b, n)

    def _floordiv(self, a, b, st: ScalarType):
        bld = self.builder
        if not st.is_signed:
            return bld.udiv(a, b)
        q, r = bld.sdiv(a, b), bld.srem(a, b)
        zero = ir.Constant(a.type, None)
        # q - 1 when the remainder is non-zero and its sign differs from the divisor's
        adjust = bld.and_(bld.icmp_signed("!=", r, zero),
                          bld.icmp_signed("!=", bld.icmp_signed("<", r, zero),
                                          bld.icmp_signed("<", b, zero)))
        return bld.sub(q, bld.zext(adjust, a.type))

    def _floormod(self, a, b, st: ScalarType):
        bld = self.builder
        if not st.is_signed:
            return bld.urem(a, b)
        r = bld.srem(a, b)
        zero = ir.Constant(a.type, None)
        adjust = bld.and_(bld.icmp_signed("!=", r, zero),
                          bld.icmp_signed("!=", bld.icmp_signed("<", r, zero),
                                          bld.icmp_signed("<", b, zero)))
        return bld.select(adjust, bld.add(r, b), r)

    # ------------------------------------------------------------------ logic
    def _e_eq(self, e: Expr):
        a, b = self._same_lanes(self.expr(e.src[0]), self.expr(e.src[1]))
        st = scalar_type(e.src[0].dtype)
        if st.is_float:
            if e.op is Op.NE:
                return self.builder.fcmp_unordered("!=", a, b)
            return self.builder.fcmp_ordered(_ICMP[e.op], a, b)
        cmp = self.builder.icmp_signed if st.is_signed else self.builder.icmp_unsigned
        return cmp(_ICMP[e.op], a, b)

    _e_ne = _e_lt = _e_le = _e_gt = _e_ge = _e_eq

    def _e_and(self, e: Expr):
        a, b = self._same_lanes(self.expr(e.src[0]), self.expr(e.src[1]))
        return self.builder.and_(a, b) if e.op is Op.AND else self.builder.or_(a, b)

    _e_or = _e_and

    def _e_not(self, e: Expr):
        a = materialize(self.builder, self.expr(e.src[0]))
        return self.builder.xor(a, broadcast(self.builder, ir.Constant(ir.IntType(1), 1), lanes_of(a)))

    def _e_select(self, e: Expr):
        c = materialize(self.builder, self.expr(e.src[0]))
        a, b = self._same_lanes(self.expr(e.src[1]), self.expr(e.src[2]))
        n = max(lanes_of(c), lanes_of(a))
        return self.builder.select(c, broadcast(self.builder, a, n), broadcast(self.builder, b, n))

    # ------------------------------------------------------------------ casts
    def _e_cast(self, e: Expr):
        x = self.expr(e.src[0])
        src, dst = scalar_type(e.src[0].dtype), e.dtype
        if dst.split("x")[0] == "handle":
            return x
        dst = scalar_type(dst)
        if isinstance(x, Ramp) and not src.is_float and not dst.is_float and not dst.is_bool:
            return Ramp(self._cast(x.base, src, dst, 1), x.stride, x.lanes)
        x = materialize(self.builder, x)
        return self._cast(x, src, dst, lanes_of(x))

    def _cast(self, x: ir.Value, src: ScalarType, dst: ScalarType, lanes: int) -> ir.Value:
        bld, to = self.builder, vec(dst.reg(), lanes)
        if src == dst:
            return x
        if dst.is_bool:
            zero = broadcast(bld, ir.Constant(x.type if lanes == 1 else x.type.element, 0
                                              if not src.is_float else 0.0), lanes)
            if src.is_float:
                return bld.fcmp_unordered("!=", x, zero)
            return bld.icmp_unsigned("!=", x, zero)
        if src.is_float and dst.is_float:
            return bld.fpext(x, to) if dst.bits > src.bits else bld.fptrunc(x, to)
        if src.is_float:
            return bld.fptosi(x, to) if dst.is_signed else bld.fptoui(x, to)
        if dst.is_float:
            return bld.sitofp(x, to) if src.is_signed and not src.is_bool else bld.uitofp(x, to)
        src_bits = 1 if src.is_bool else src.bits
        if dst.bits < src_bits:
            return bld.trunc(x, to)
        if dst.bits == src_bits:
            return x
        return bld.sext(x, to) if src.is_signed and not src.is_bool else bld.zext(x, to)

    # ------------------------------------------------------------------ vectors
    def _e_ramp(self, e: Expr):
        base = materialize(self.builder, self.expr(e.src[0]))
        stride = self.expr(e.src[1])
        c = _const_int(stride)
        if c is not None and lanes_of(base) == 1:
            return Ramp(base, c, e.arg)
        steps = [self.builder.mul(stride, ir.Constant(stride.type, i)) for i in range(e.arg)]
        return self.builder.add(broadcast(self.builder, base, e.arg), pack_lanes(self.builder, steps))

    def _e_broadcast(self, e: Expr):
        x = self.expr(e.src[0])
        return x if lanes_of(x) == 1 else materialize(self.builder, x)   # scalars broadcast lazily

    # ------------------------------------------------------------------ let / call
    def _e_let(self, e: Expr):
        var, value, body = e.src
        outer = self.env.get(var)
        self.env[var] = self.expr(value)
        try:
            return self.expr(body)
        finally:
            if outer is None:
                del self.env[var]
            else:
                self.env[var] = outer

    def _e_call(self, e: Expr):
        name = e.arg
        if name == "address_of":
            (ld,) = e.src
            if ld.op is not Op.LOAD:
                raise ValueError(f"address_of takes one LOAD, not {ld}")
            return self.address(ld.arg, materialize(self.builder, self.expr(ld.src[0])))
        args = [materialize(self.builder, self.expr(a)) for a in e.src]
        if name in intrin_x86.X86_INTRINSICS:           # operands of their own types
            target = getattr(self, "target", None)
            if target is not None:
                intrin_x86.check_target(name, target)
            return intrin_x86.emit(self.builder, self.module, name, args)
        n = max(lanes_of(a) for a in args)
        args = [broadcast(self.builder, a, n) for a in args]
        st = scalar_type(e.dtype)
        if not st.is_float:
            raise ValueError(f"intrinsic {name!r} needs float operands, not {e.dtype} ({e})")
        bld, one = self.builder, broadcast(self.builder, ir.Constant(st.reg(), 1.0), n)
        if name == "rsqrt":
            return bld.fdiv(one, call_math(bld, self.module, "sqrt", args))
        if name == "sigmoid":
            neg = bld.fsub(broadcast(bld, ir.Constant(st.reg(), 0.0), n), args[0])
            return bld.fdiv(one, bld.fadd(one, call_math(bld, self.module, "exp", [neg])))
        if name == "if_then_else":
            raise ValueError("if_then_else must be lowered to IfThenElse before code generation")
        return call_math(bld, self.module, name, args)

    # ------------------------------------------------------------------ memory
    def address(self, buffer, index: ir.Value) -> ir.Value:
        """Address of element ``index`` (an LLVM integer) of ``buffer``."""
        try:
            base = self.buffers[buffer]
        except KeyError:
            raise ValueError(f"buffer {buffer.name!r} is accessed but neither a parameter nor "
                             "allocated in scope") from None
        return self.builder.gep(base, [index], source_etype=scalar_type(buffer.dtype).mem(),
                                inbounds=True)

    def _e_load(self, e: Expr):
        buffer = e.arg
        st = scalar_type(buffer.dtype)
        if len(e.src) != 1:
            raise ValueError(f"load of {buffer.name!r} has {len(e.src)} indices; code generation "
                             "needs one flat index (run storage_flatten / compiler.tir.lower)")
        index = self.expr(e.src[0])
        bld = self.builder
        if isinstance(index, Ramp) and index.stride == 0:
            index = index.base
        if isinstance(index, Ramp) and index.stride == 1:
            ld = bld.load(self.address(buffer, index.base), typ=vec(st.mem(), index.lanes))
            ld.align = st.nbytes
            return self._from_mem(ld, st)
        if (isinstance(index, Ramp) and 1 < index.stride <= STRIDED_LOAD_MAX
                and index.lanes >= 2):
            # one load of the span from the first lane to the last, then a shuffle picking
            # every stride-th element (a stride-2 depthwise conv's taps): no byte outside the
            # addresses the lanes read is touched beyond those in between
            span = index.stride * (index.lanes - 1) + 1
            wide = bld.load(self.address(buffer, index.base), typ=vec(st.mem(), span))
            wide.align = st.nbytes
            mask = ir.Constant(ir.VectorType(ir.IntType(32), index.lanes),
                               [i * index.stride for i in range(index.lanes)])
            return self._from_mem(bld.shuffle_vector(
                wide, ir.Constant(wide.type, ir.Undefined), mask), st)
        lanes = lanes_of(index)
        if lanes == 1:
            ld = bld.load(self.address(buffer, index), typ=st.mem())
            ld.align = st.nbytes
            return self._from_mem(ld, st)
        parts = []
        for idx in extract_lanes(bld, index, lanes):       # gather, one lane at a time
            ld = bld.load(self.address(buffer, idx), typ=st.mem())
            ld.align = st.nbytes
            parts.append(ld)
        return self._from_mem(pack_lanes(bld, parts), st)

    def _from_mem(self, x: ir.Value, st: ScalarType) -> ir.Value:
        if not st.is_bool:
            return x
        zero = broadcast(self.builder, ir.Constant(ir.IntType(8), 0), lanes_of(x))
        return self.builder.icmp_unsigned("!=", x, zero)

    def to_mem(self, x: ir.Value, st: ScalarType) -> ir.Value:
        """Register value ``x`` as stored in memory (bool: i1 -> i8)."""
        if not st.is_bool:
            return x
        return self.builder.zext(x, vec(ir.IntType(8), lanes_of(x)))
