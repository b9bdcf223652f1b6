"""The accelerator's tensor intrinsics: GEMM (body/reset/update) and ALU.

GEMM, as VTA's ``vta/python/vta/intrin.py``: a declared compute
``out[b, o] = sum_k int32(inp[b, k]) * int32(wgt[o, k])`` over one INP element
(BATCH x BLOCK_IN int8), one WGT element (BLOCK_OUT x BLOCK_IN int8) and one
ACC element (BATCH x BLOCK_OUT int32), each operand in its SRAM scope and
aligned to whole elements (``te.Layout``). Its statements are access-pointer
evaluations, the form ``compiler.codegen.vta`` reads:

- ``reset``:  ``Evaluate(address_of(acc[...]))``             -> GEMM reset=1
- ``update``: ``Evaluate(address_of(acc)); ...(inp); ...(wgt)`` -> GEMM
- ``body``:   reset then update.

ALU: ``alu(op, dst, src=None, imm=None)`` gives the statement for
``acc[dst] = op(acc[dst], imm or acc[src])`` on one ACC element, tagged
``AttrStmt("tensorize", "vta.alu.<OP>")``; ``op`` is an ``AluOp`` name
(MIN, MAX, ADD, SHR, MUL); ``imm`` is a signed 16-bit immediate.
"""
from __future__ import annotations

from compiler import te
from compiler.tir import ir
from vta_hw.alu import parse_alu_op
from vta_hw.config import ALU_IMM_BITS
from vta_hw.isa import AluOp

from .environment import ACC_SCOPE, ALU_PREFIX, GEMM, INP_SCOPE, WGT_SCOPE, Env


def _shr(a, b):
    """SHR as ``vta_hw.alu`` states it, for a constant amount ``b`` (the compiler only
    shifts by immediates): floor division is the arithmetic right shift."""
    n = max(-31, min(int(b.value), 31))   # the hardware shifts by at most 31 either way
    return a // (1 << n) if n >= 0 else a * (1 << -n)


#: The te form of each ALU op (``b`` a te expression, a constant for an immediate), one
#: entry per ``AluOp`` with the semantics of ``vta_hw.alu.SEMANTICS``; a test checks both
#: tables agree.
TE_OPS = {
    AluOp.MIN: te.minimum,
    AluOp.MAX: te.maximum,
    AluOp.ADD: lambda a, b: a + b,
    AluOp.SHR: _shr,
    AluOp.MUL: lambda a, b: a * b,
}
#: The ops that take a tensor operand in ``alu_intrin`` (SHR shifts by an immediate).
TENSOR_OPS = (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.MUL)


def _ptr(view: te.BufferView) -> ir.Stmt:
    return ir.Evaluate(view.access_ptr())


def gemm_intrin(env: Env) -> te.TensorIntrin:
    """The GEMM tensor intrinsic of ``env`` (name ``"vta.gemm"``)."""
    B, BI, BO = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    inp = te.placeholder((B, BI), "int8", name="inp")
    wgt = te.placeholder((BO, BI), "int8", name="wgt")
    k = te.reduce_axis(BI, "k")
    out = te.compute((B, BO), lambda b, o: te.sum(
        te.cast(inp[b, k], "int32") * te.cast(wgt[o, k], "int32"), axis=k), name="acc")

    def impl(ins, outs):
        iv, wv = ins
        (ov,) = outs
        reset = _ptr(ov)
        update = ir.seq(_ptr(ov), _ptr(iv), _ptr(wv))
        return ir.seq(reset, update), reset, update

    layouts = {"inp": te.Layout(INP_SCOPE, B * BI), "wgt": te.Layout(WGT_SCOPE, BO * BI),
               "acc": te.Layout(ACC_SCOPE, B * BO)}
    return te.decl_tensor_intrin(out, impl, GEMM, layouts)


def element_view(env: Env, buf: ir.Buffer, index) -> te.BufferView:
    """A view of SRAM element ``index`` of ``buf`` (shape ``(entries, rows, cols)``)."""
    return te.BufferView(buf, (ir.convert(index), ir.const(0), ir.const(0)), tuple(buf.shape[1:]))


def gemm(env: Env, intrin: te.TensorIntrin, acc: te.BufferView, inp: te.BufferView | None = None,
         wgt: te.BufferView | None = None) -> ir.Stmt:
    """The tagged GEMM statement: ``reset`` when ``inp``/``wgt`` are None, else ``update``."""
    _, reset, update = intrin.statements([inp, wgt] if inp is not None else [acc, acc], [acc])
    return ir.AttrStmt("tensorize", intrin.name, reset if inp is None else update)


def alu(op: str, dst: te.BufferView, src: te.BufferView | None = None,
        imm: int | None = None) -> ir.Stmt:
    """``acc[dst] = op(acc[dst], imm if imm is not None else acc[src])``, tagged for codegen.

    Raises:
        ValueError: unknown ``op``, neither or both of ``src``/``imm``, or an
            immediate that does not fit the signed 16-bit field.
    """
    op = parse_alu_op(op).name
    if (src is None) == (imm is None):
        raise ValueError(f"ALU {op}: give exactly one of src= (an ACC element) or imm=")
    if imm is not None:
        lo, hi = -(1 << (ALU_IMM_BITS - 1)), (1 << (ALU_IMM_BITS - 1)) - 1
        if not lo <= int(imm) <= hi:
            raise ValueError(f"ALU {op} immediate must be in [{lo}, {hi}], not {imm}")
        operand = ir.Evaluate(ir.const(int(imm), "int32"))
    else:
        operand = _ptr(src)
    return ir.AttrStmt("tensorize", ALU_PREFIX + op, ir.seq(_ptr(dst), operand))


def alu_intrin(env: Env, op: str, imm: int | None = None) -> te.TensorIntrin:
    """An ALU tensor intrinsic over one ACC element, for te stages in ``local.acc_buffer``:
    ``out = op(x, y)`` (two inputs, ``imm`` None; ADD, MIN, MAX, MUL) or ``out = op(x, imm)``.

    Its statement names the result, the left operand and the right operand (or the
    immediate); the code generator runs it in place (the result stage takes the left
    operand's entries), as the ALU writes ``acc[dst] = op(acc[dst], ...)``.

    Raises:
        ValueError: an unknown ``op`` (the message lists the ALU ops), or SHR without
            ``imm``.
    """
    alu_op = parse_alu_op(op)
    B, BO = env.BATCH, env.BLOCK_OUT
    x = te.placeholder((B, BO), "int32", name="x")
    if imm is None:
        if alu_op not in TENSOR_OPS:
            raise ValueError(f"ALU op {alu_op.name} with a tensor operand must be one of "
                             f"{', '.join(o.name for o in TENSOR_OPS)}, not {alu_op.name!r}; "
                             "give imm= for SHR")
        y = te.placeholder((B, BO), "int32", name="y")
        out = te.compute((B, BO), lambda b, o: TE_OPS[alu_op](x[b, o], y[b, o]), name="out")
    else:
        imm = int(imm)
        k = ir.const(imm, "int32")
        out = te.compute((B, BO), lambda b, o: TE_OPS[alu_op](x[b, o], k), name="out")
    layout = te.Layout(ACC_SCOPE, B * BO)
    layouts = {t.name: layout for t in out.op.reads()} | {"out": layout}

    def impl(ins, outs):
        operand = _ptr(ins[1]) if imm is None else ir.Evaluate(ir.const(imm, "int32"))
        return ir.seq(_ptr(outs[0]), _ptr(ins[0]), operand)

    return te.decl_tensor_intrin(out, impl, ALU_PREFIX + alu_op.name, layouts)
