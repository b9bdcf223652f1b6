"""x86 dot-product and matrix instructions that tensor intrinsics call (VNNI, AVX512-BF16, AMX).

Each entry of :data:`X86_INTRINSICS` is one loop-IR call name (``ir.target_call(name,
dtype, *operands)``), the LLVM features it needs, and how to emit it through llvmlite
(an ``llvm.x86.*`` intrinsic, the operands reinterpreted to its types). Importing this
module registers the names in ``compiler.tir.ir.TARGET_INTRINSICS``, so the IR verifier
accepts them; ``ExprEmitter`` dispatches their calls here.

Calls (operand dtypes as in the loop IR; ``N`` lanes of the int32 / float32 accumulator):

    x86.vpdpbusd     (acc int32xN, a uint8x4, b int8x(4N)) -> int32xN, N in 16 (AVX512-VNNI),
                     8 (AVX512-VNNI + VL, or AVX-VNNI): acc[i] += sum_k a[k] * b[4i + k],
                     a's four bytes broadcast to every lane (``vpdpbusd``; u8 x s8, no
                     saturation: 4 products of at most 255 * 128 fit the int32 easily)
    x86.vdpbf16ps    (acc float32x16, a int16x2, b int16x32) -> float32x16: bf16 operands
                     held as their 16-bit patterns; acc[i] += a[0] b[2i] + a[1] b[2i+1]
                     in fp32 (AVX512-BF16 ``vdpbf16ps``)
    x86.amx.tdpbusd  (c handle, a handle, b handle, lda int32) -> int32 0: one 16 x 16 int32
                     tile ``C += A(16 x 64 u8) . B(16 rows of 16 x 4 s8, VNNI-interleaved)``:
                     three ``tileloadd``, ``tdpbusd``, ``tilestored``; ``lda`` A's row
                     stride in bytes, C and B rows of 64 bytes. The same with
                     ``x86.amx.tdpbf16ps`` on bf16 (A 16 x 32, B 16 rows of 16 x 2, fp32
                     C). The tile configuration (a constant) is loaded once per function,
                     in its entry block; kernels release the tiles before they return
                     (:func:`release_tiles`). C still goes through memory per call
                     (keeping it in a tile across the reduction is the next step).
    x86.bf16_bits    (float32xN) -> int16xN: the nearest bfloat16 (ties to even) as bits
                     (NaN payloads not preserved); plain integer code, any x86 CPU
    x86.bf16_value   (int16xN) -> float32xN: the value of bfloat16 bits (exact); plain
                     code, any x86 CPU (the AMX kernels' emulation reads its operands so)

Errors: :func:`emit` raises ``ValueError`` for an unknown name, wrong operand count or
lanes; :func:`check_target` for a target without the features (the code generator calls
it before emitting).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from compiler.tir import ir as tir

_I8, _I16, _I32, _I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)


@dataclass(frozen=True)
class X86Intrinsic:
    """One call name: ``features`` (LLVM ``+x`` names, any one tuple of which suffices) and
    ``emit(builder, module, args) -> value``."""

    name: str
    features: tuple[tuple[str, ...], ...]
    emit: Callable


X86_INTRINSICS: dict[str, X86Intrinsic] = {}


def _register(name: str, *features: tuple[str, ...]):
    """Register ``name`` (a call name) needing any one of the ``features`` tuples (none: any
    x86 CPU) with the decorated emitter."""
    def deco(fn):
        X86_INTRINSICS[name] = X86Intrinsic(name, features, fn)
        tir.TARGET_INTRINSICS.add(name)
        return fn
    return deco


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name)


def _lanes(v: ir.Value) -> int:
    return v.type.count if isinstance(v.type, ir.VectorType) else 1


def _splat(b: ir.IRBuilder, x: ir.Value, n: int) -> ir.Value:
    vt = ir.VectorType(x.type, n)
    one = b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(_I32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(_I32, n), [0] * n))


def _check(name: str, args: list, count: int, want: str, ok: bool) -> None:
    if len(args) != count or not ok:
        raise ValueError(f"{name} takes {want}, not {[str(a.type) for a in args]}")


@_register("x86.vpdpbusd", ("+avx512vnni",), ("+avxvnni",))
def _vpdpbusd(b: ir.IRBuilder, module: ir.Module, args: list) -> ir.Value:
    n = _lanes(args[0]) if args else 0
    _check("x86.vpdpbusd", args, 3, "(int32x16 | int32x8 acc, uint8x4 a, int8x(4N) b)",
           n in (8, 16) and _lanes(args[1]) == 4 and _lanes(args[2]) == 4 * n)
    vt = ir.VectorType(_I32, n)
    a = _splat(b, b.bitcast(args[1], _I32), n)
    w = b.bitcast(args[2], vt)
    fn = _declare(module, f"llvm.x86.avx512.vpdpbusd.{32 * n}", vt, [vt, vt, vt])
    return b.call(fn, [args[0], a, w])


@_register("x86.vdpbf16ps", ("+avx512bf16",))
def _vdpbf16ps(b: ir.IRBuilder, module: ir.Module, args: list) -> ir.Value:
    _check("x86.vdpbf16ps", args, 3, "(float32x16 acc, int16x2 a, int16x32 b)",
           _lanes(args[0]) == 16 and _lanes(args[1]) == 2 and _lanes(args[2]) == 32)
    a = _splat(b, b.bitcast(args[1], _I32), 16)
    vt = ir.VectorType(_I16, 32)
    fn = _declare(module, "llvm.x86.avx512bf16.dpbf16ps.512", args[0].type, [args[0].type, vt, vt])
    return b.call(fn, [args[0], b.bitcast(a, vt), args[2]])


#: AMX tile configuration (Intel SDM, LDTILECFG): palette 1; tiles 0 (C), 1 (A), 2 (B) of
#: 16 rows x 64 bytes; bytes 16..47 are the tiles' column bytes (u16), 48..63 their rows
_TILECFG = bytes([1] + [0] * 15 + [64, 0] * 3 + [0] * 26 + [16] * 3 + [0] * 13)


def _tile_config(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get("__amx_tilecfg")
    if g is None:
        ty = ir.ArrayType(_I8, 64)
        g = ir.GlobalVariable(module, ty, "__amx_tilecfg")
        g.initializer = ir.Constant(ty, bytearray(_TILECFG))
        g.global_constant, g.linkage, g.align = True, "internal", 64
    return g


def _configures_tiles(fn: ir.Function) -> bool:
    """Whether ``fn``'s entry block loads the tile configuration."""
    return bool(fn.blocks) and any(
        getattr(getattr(i, "callee", None), "name", "") == "llvm.x86.ldtilecfg"
        for i in fn.entry_basic_block.instructions)


def _configure_tiles(b: ir.IRBuilder, module: ir.Module) -> None:
    """``ldtilecfg`` once per function, at the end of its entry block (which dominates every
    tile instruction). The tile configuration is per thread, and an outlined parallel body
    is a function of its own, so each thread that runs tile code configures first."""
    entry = b.function.entry_basic_block
    if _configures_tiles(b.function):
        return
    ptr = ir.IntType(8).as_pointer()
    eb = ir.IRBuilder(entry)
    if entry.is_terminated:
        eb.position_before(entry.terminator)
    eb.call(_declare(module, "llvm.x86.ldtilecfg", ir.VoidType(), [ptr]),
            [eb.bitcast(_tile_config(module), ptr)])


def release_tiles(b: ir.IRBuilder, module: ir.Module) -> None:
    """``tilerelease`` (tiles back to their initial state) where ``b`` stands, if the
    function there or one of its outlined parallel bodies (``<name>.parallel<i>``) used AMX
    tiles; the code generator calls it before a kernel returns. (The pool's other threads
    keep their configuration until their next kernel; release where no tiles are
    configured is a no-op.)"""
    fn = b.function
    if any(_configures_tiles(f) for f in module.functions
           if f is fn or f.name.startswith(fn.name + ".parallel")):
        b.call(_declare(module, "llvm.x86.tilerelease", ir.VoidType(), []), [])


def _amx(op: str):
    def emit(b: ir.IRBuilder, module: ir.Module, args: list) -> ir.Value:
        _check(f"x86.amx.{op}", args, 4, "(c, a, b handles, a's row stride in bytes)",
               all(isinstance(a.type, ir.PointerType) for a in args[:3]) if len(args) == 4 else False)
        c, a, w, lda = args
        ptr = c.type
        _configure_tiles(b, module)
        load = _declare(module, "llvm.x86.tileloadd64", ir.VoidType(), [_I8, ptr, _I64])
        store = _declare(module, "llvm.x86.tilestored64", ir.VoidType(), [_I8, ptr, _I64])
        row = ir.Constant(_I64, 64)
        lda = b.sext(lda, _I64) if lda.type != _I64 else lda
        for tile, (p, stride) in enumerate(((c, row), (a, lda), (w, row))):
            b.call(load, [ir.Constant(_I8, tile), b.bitcast(p, ptr), stride])
        b.call(_declare(module, f"llvm.x86.{op}", ir.VoidType(), [_I8, _I8, _I8]),
               [ir.Constant(_I8, 0), ir.Constant(_I8, 1), ir.Constant(_I8, 2)])
        b.call(store, [ir.Constant(_I8, 0), c, row])
        return ir.Constant(_I32, 0)
    return emit


_register("x86.amx.tdpbusd", ("+amx-int8", "+amx-tile"))(_amx("tdpbusd"))
_register("x86.amx.tdpbf16ps", ("+amx-bf16", "+amx-tile"))(_amx("tdpbf16ps"))


@_register("x86.bf16_bits")
def _bf16_bits(b: ir.IRBuilder, module: ir.Module, args: list) -> ir.Value:
    """float32(xN) -> int16(xN): the bfloat16 nearest (ties to even) as its bit pattern."""
    x = args[0] if len(args) == 1 else None
    _check("x86.bf16_bits", args, 1, "(float32 or float32xN)",
           x is not None and str(x.type).startswith(("float", "<")))
    n = _lanes(x)
    i32 = ir.VectorType(_I32, n) if n > 1 else _I32

    def k(v):
        return ir.Constant(i32, [v] * n) if n > 1 else ir.Constant(_I32, v)
    bits = b.bitcast(x, i32)
    odd = b.and_(b.lshr(bits, k(16)), k(1))
    rounded = b.lshr(b.add(b.add(bits, k(0x7FFF)), odd), k(16))
    return b.trunc(rounded, ir.VectorType(_I16, n) if n > 1 else _I16)


@_register("x86.bf16_value")
def _bf16_value(b: ir.IRBuilder, module: ir.Module, args: list) -> ir.Value:
    """int16(xN) bfloat16 bits -> float32(xN), exactly (the bits are the float's top half)."""
    x = args[0] if len(args) == 1 else None
    _check("x86.bf16_value", args, 1, "(int16 or int16xN)",
           x is not None and str(x.type) in ("i16", f"<{_lanes(x)} x i16>"))
    n = _lanes(x)
    i32 = ir.VectorType(_I32, n) if n > 1 else _I32
    wide = b.shl(b.zext(x, i32), ir.Constant(i32, [16] * n) if n > 1 else ir.Constant(_I32, 16))
    return b.bitcast(wide, ir.VectorType(ir.FloatType(), n) if n > 1 else ir.FloatType())


def check_target(name: str, target) -> None:
    """Raise unless ``target`` (a ``Target``) can run call ``name``: an x86-64 target whose
    features include one of the entry's feature sets (LLVM would otherwise abort the
    process with "Cannot select" on the intrinsic).

    Raises:
        ValueError: another architecture, or the features are missing (named, with the fix).
    """
    options = X86_INTRINSICS[name].features
    if target.arch != "x86_64":
        raise ValueError(f"{name} is an x86-64 instruction; target {target} is {target.arch}: "
                         "schedule this kernel without it for that target")
    have = set(target.features.split(","))
    if options and not any(all(f in have for f in opt) for opt in options):
        need = " or ".join(",".join(opt) for opt in options)
        raise ValueError(f"{name} needs CPU feature(s) {need}, which target {target} lacks; "
                         f"add -mattr={need.split(' or ')[0]} for a CPU that has them, or pick "
                         "the kernel path the target's features allow")


def emit(b: ir.IRBuilder, module: ir.Module, name: str, args: list) -> ir.Value:
    """Emit target call ``name`` on LLVM values ``args`` (see module docstring).

    Raises:
        ValueError: unknown name, or operands of the wrong count or lanes.
    """
    entry = X86_INTRINSICS.get(name)
    if entry is None:
        raise ValueError(f"unknown x86 intrinsic {name!r}; known: {', '.join(sorted(X86_INTRINSICS))}")
    return entry.emit(b, module, args)
