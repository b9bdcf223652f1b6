"""Targets, object files for cross targets, and host shared libraries."""
import shutil
import struct

import numpy as np
import pytest

from compiler import te
from compiler.build import build
from compiler.codegen import AARCH64, ARMV7, WASM32, host_target, load_library, parse_target

# ELF e_machine values (System V gABI): x86-64 62, ARM 40, AArch64 183.
EM_X86_64, EM_ARM, EM_AARCH64 = 62, 40, 183


N = 1 << 15     # codegen's MIN_PARALLEL_WORK: a smaller nest runs serially


def schedule():
    n = N
    A = te.placeholder((n,), "float32", "A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    s[B].parallel(xo)
    return s, [A, B]


def elf_header(obj: bytes):
    """(ELF class: 1 = 32-bit, 2 = 64-bit, e_machine) of an ELF object."""
    assert obj[:4] == b"\x7fELF"
    endian = "<" if obj[5] == 1 else ">"
    return obj[4], struct.unpack_from(endian + "H", obj, 18)[0]


@pytest.mark.parametrize("target,cls,machine", [("llvm", 2, EM_X86_64), (AARCH64, 2, EM_AARCH64),
                                                ("aarch64", 2, EM_AARCH64), (ARMV7, 1, EM_ARM)])
def test_elf_objects(target, cls, machine, tmp_path):
    if target == "llvm" and host_target().arch != "x86_64":
        pytest.skip("host check written for x86-64 hosts")
    s, args = schedule()
    m = build(s, args, target=target, name="scale")
    obj = m.object_code()
    assert elf_header(obj) == (cls, machine)
    path = m.save_object(str(tmp_path / "scale.o"))
    assert open(path, "rb").read() == obj
    assert "scale" in m.assembly()


def test_cross_objects_keep_simd_and_threads():
    s, args = schedule()
    arm = build(s, args, target=AARCH64)
    asm = arm.assembly()
    assert "GOMP_parallel" in asm and ".4s" in asm      # NEON 4 x float32
    wasm = build(s, args, target=WASM32)
    assert "GOMP_parallel" not in wasm.llvm_ir          # no thread runtime: serial


def test_wasm32_object_magic():
    s, args = schedule()
    obj = build(s, args, target=WASM32).object_code()
    assert obj[:8] == b"\0asm\x01\0\0\0"


def test_cross_modules_do_not_run_here():
    s, args = schedule()
    m = build(s, args, target=AARCH64, name="scale")
    with pytest.raises(ValueError, match="built for llvm -mtriple=aarch64-unknown-linux-gnu .*cannot run here"):
        m(np.zeros(N, "float32"), np.zeros(N, "float32"))
    with pytest.raises(ValueError, match="shared libraries are linked for the host only"):
        m.export_library("/tmp/never.so")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to link")
def test_shared_library_roundtrip(tmp_path):
    s, args = schedule()
    m = build(s, args, name="scale")
    path = m.export_library(str(tmp_path / "libscale.so"))
    lib = load_library(path)
    assert [spec.name for spec in lib.specs["scale"]] == ["A", "B"]
    a = np.random.default_rng(3).random(N, dtype="float32")
    b = np.zeros(N, "float32")
    lib(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    with pytest.raises(ValueError, match="argument 'A' has shape"):
        lib["scale"](np.zeros(3, "float32"), b)


def test_parse_target():
    host = parse_target("llvm")
    assert host.is_host and host.cpu and host == host_target()
    arm = parse_target("llvm -mtriple=armv7-linux-gnueabihf -mattr=+neon")
    assert not arm.is_host and arm.arch == "armv7" and arm.features == "+neon"
    assert parse_target("llvm -mcpu=skylake-avx512 -mattr=+avx512f").vector_bits == 512
    assert parse_target("llvm -mcpu=haswell -mattr=+avx2").vector_bits == 256
    with pytest.raises(ValueError, match="target option must be -mtriple=, -mcpu= or -mattr=, not "
                                         "'-march=x'"):
        parse_target("llvm -march=x")
    with pytest.raises(ValueError, match="LLVM has no backend for triple 'nosuch-unknown-none'"):
        parse_target("llvm -mtriple=nosuch-unknown-none")
    with pytest.raises(TypeError, match="target must be a str or Target, not 3"):
        parse_target(3)


def test_host_features_reach_the_code():
    feats = host_target().features
    if "+avx512f" not in feats and "+avx2" not in feats:
        pytest.skip("host has neither AVX2 nor AVX-512")
    s, args = schedule()
    asm = build(s, args).assembly()
    assert ("zmm" if "+avx512f" in feats else "ymm") in asm


def test_explicit_cpu_overrides_host_features():
    if "+avx2" not in host_target().features:
        pytest.skip("host cannot run AVX2 code")
    s, args = schedule()
    m = build(s, args, target="llvm -mcpu=haswell", name="scale")
    assert m.target.is_host and m.target.cpu == "haswell"
    asm = m.assembly()
    assert "ymm" in asm and "zmm" not in asm
    a = np.arange(N, dtype="float32")
    b = np.zeros(N, "float32")
    m(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to link")
def test_shared_library_with_several_kernels_and_scalar_params(tmp_path):
    from compiler.tir import ir as T
    from compiler.tir.ops import ForKind
    n = 32
    x = T.Buffer("x", "int32", (n,))
    k = T.var("k", "int32")
    i = T.var("i")
    add = T.PrimFunc("add_k", (x, k), T.For(i, T.const(0), T.const(n), ForKind.PARALLEL,
                                           T.Store(x, T.load(x, [i]) + k, (i,))))
    neg = T.PrimFunc("negate", (x,), T.For(i, T.const(0), T.const(n), ForKind.SERIAL,
                                          T.Store(x, T.const(0) - T.load(x, [i]), (i,))))
    lib = load_library(build([add, neg]).export_library(str(tmp_path / "libtwo.so")))
    a = np.arange(n, dtype="int32")
    lib["add_k"](a, 5)
    lib["negate"](a)
    np.testing.assert_array_equal(a, -(np.arange(n) + 5))
    with pytest.raises(TypeError, match="library has kernels add_k, negate"):
        lib(a)
