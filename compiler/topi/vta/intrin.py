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
(MIN, MAX, ADD, SHR, MUL, REQUANT); ``imm`` is a signed 16-bit immediate
(REQUANT takes ``src`` and ``imm``, its control word). te stages
reach the ALU through the ``env.alu`` pragma instead
(``compiler.codegen.vta.alu_pragma`` emits these statements).
"""
from __future__ import annotations

from compiler import te
from compiler.tir import ir
from vta_hw.alu import IMM_CONTROL, parse_alu_op
from vta_hw.config import ALU_IMM_BITS

from .environment import ACC_SCOPE, ALU_PREFIX, GEMM, INP_SCOPE, WGT_SCOPE, Env


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
    """``acc[dst] = op(acc[dst], imm if imm is not None else acc[src])``, tagged for codegen;
    for an op of ``vta_hw.alu.IMM_CONTROL`` (REQUANT) both: ``src`` the operand and ``imm``
    the control word (``vta_hw.alu.requant_imm``).

    Raises:
        ValueError: unknown ``op``, neither or both of ``src``/``imm`` (REQUANT: not both),
            or an immediate that does not fit the signed 16-bit field.
    """
    alu_op = parse_alu_op(op)
    op = alu_op.name
    if alu_op in IMM_CONTROL:
        if src is None or imm is None:
            raise ValueError(f"ALU {op}: give both src= (an ACC element) and imm= (the control "
                             "word, vta_hw.alu.requant_imm)")
    elif (src is None) == (imm is None):
        raise ValueError(f"ALU {op}: give exactly one of src= (an ACC element) or imm=")
    operands = [_ptr(dst)]
    if src is not None:
        operands.append(_ptr(src))
    if imm is not None:
        lo, hi = -(1 << (ALU_IMM_BITS - 1)), (1 << (ALU_IMM_BITS - 1)) - 1
        if not lo <= int(imm) <= hi:
            raise ValueError(f"ALU {op} immediate must be in [{lo}, {hi}], not {imm}")
        operands.append(ir.Evaluate(ir.const(int(imm), "int32")))
    return ir.AttrStmt("tensorize", ALU_PREFIX + op, ir.seq(*operands))
