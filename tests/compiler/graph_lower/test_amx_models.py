"""Whole models on AMX: ``build_model`` for a target with AMX picks the tile kernels for the
convs they take (int8 ``tdpbusd`` through the ``amx`` int8 path, bf16 ``tdpbf16ps`` through
the ``conv2d_bf16_amx`` strategy), one tile configuration per kernel; the manifest records
the features; on a CPU without AMX, loading fails with a clear error, not SIGILL. The
numerics run here on the same kernels built without the tile instruction (their emulation),
the module's AMX feature checks stubbed."""
import re
import shutil
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import build_model
from compiler.codegen.llvm.target import host_target
from compiler.quant import run as run_oracle
from compiler.topi import x86_amx
from driver import runtime
from driver.runtime import cpu_features, load_module
from driver.runtime.errors import RuntimeModuleError
from vta_hw.host_cpu import OS_NAME

SPR = "llvm -mcpu=sapphirerapids"
HOST = host_target()
HAVE = set(HOST.features.split(","))
HOST_AMX = {"+amx-tile", "+amx-int8", "+amx-bf16"} <= HAVE
needs_objdump = pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")


def _cnn():
    """x [1, 3, 16, 16] -> Conv 3x3 (32) -> Relu -> Conv 3x3 s2 (32) -> Relu -> Conv 1x1 (24)
    -> GlobalAveragePool -> Gemm 16: a 3-channel stem (VNNI / AVX512-BF16) and two convs
    AMX takes (one strided, OW 8 of a 16-column tile)."""
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
    inits = {"w1": w(32, 3, 3, 3), "b1": w(32), "w2": w(32, 32, 3, 3), "b2": w(32),
             "w3": w(24, 32, 1, 1), "fc": w(16, 24), "fb": w(16)}
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("Relu", ["c2"], ["r2"]),
         helper.make_node("Conv", ["r2", "w3"], ["c3"]),
         helper.make_node("GlobalAveragePool", ["c3"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1)], "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _calib():
    return {"x": np.random.default_rng(1).standard_normal((4, 3, 16, 16)).astype(np.float32)}


def _count(cm, tmp_path, mnemonics):
    so = tmp_path / "kernels.so"
    so.write_bytes(cm.files["kernels.so"])
    asm = subprocess.run(["objdump", "-d", str(so)], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return {m: len(re.findall(rf"\s{m}\b", asm)) for m in mnemonics}


@needs_objdump
@pytest.mark.parametrize("kind", ["int8", "bf16"])
def test_amx_target_picks_tile_kernels(kind, tmp_path):
    opts = {"quantize": "int8", "calib": _calib()} if kind == "int8" else {"dtype": "bfloat16"}
    cm = build_model(_cnn(), target=SPR, **opts)
    assert {"+amx-tile", "+amx-int8", "+amx-bf16"} <= set(cm.manifest()["cpu"]["features"])
    tile, vec = ("tdpbusd", "vpdpbusd") if kind == "int8" else ("tdpbf16ps", "vdpbf16ps")
    n = _count(cm, tmp_path, (tile, vec, "ldtilecfg", "tilerelease"))
    # two convs on tiles, each kernel configuring the tiles once; the stem on VNNI / BF16
    assert n[tile] >= 2 and n[vec] >= 1 and n["ldtilecfg"] == 2 and n["tilerelease"] == 2
    if kind == "int8":
        assert cm.stats["int8_path"] == "amx"
    else:
        packed = [k.partition("#")[2] for k in cm.params if "#" in k]
        assert sorted(packed).count("conv_bf16_amx:16") == 2 and "conv_bf16:16" in packed
    if HOST_AMX:
        load_module(cm)(np.zeros((1, 3, 16, 16), np.float32))
        return
    with pytest.raises(RuntimeModuleError,
                       match=r"needs CPU feature amx-.*which this machine lacks"):
        load_module(cm)
    # past the feature check, the kernel refuses the tile state: driver.runtime.amx says so
    flags = {OS_NAME.get(f[1:], f[1:])
             for f in cm.manifest()["cpu"]["features"]}         # a Sapphire Rapids, as seen
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpu_features, "host_cpu_flags", lambda: frozenset(flags))
        with pytest.raises(RuntimeModuleError, match=r"refused AMX tile data.*errno"):
            load_module(cm)


@pytest.fixture
def emulated_amx(monkeypatch):
    """A target with this CPU's features plus AMX, whose AMX kernels are built without the
    tile instruction (their loop nests run anywhere), loaded with the AMX checks stubbed."""
    orig = x86_amx.schedule_conv2d_amx
    monkeypatch.setattr(x86_amx, "schedule_conv2d_amx",
                        lambda s, acc, out, dtype, tensorize=True: orig(s, acc, out, dtype, False))
    monkeypatch.setattr(runtime, "select_variant", lambda source: source)
    monkeypatch.setattr(runtime, "needs_amx", lambda cpu: False)
    return f"llvm -mcpu={HOST.cpu} -mattr=+amx-tile,+amx-int8,+amx-bf16"


@pytest.mark.skipif("+avx512vnni" not in HAVE, reason="the amx int8 path's VNNI stem runs here")
def test_amx_int8_model_emulated_bit_exact(emulated_amx):
    cm = build_model(_cnn(), target=emulated_amx, quantize="int8", calib=_calib())
    assert cm.stats["int8_path"] == "amx"
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = load_module(cm)(x)[0]
    np.testing.assert_array_equal(got, run_oracle(cm.plan.qgraph, {"x": x})[0])


@pytest.mark.skipif("+avx512bf16" not in HAVE, reason="the bf16 stem runs on AVX512-BF16 here")
def test_amx_bf16_model_emulated_matches_avx512_bf16(emulated_amx):
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    cm = build_model(_cnn(), target=emulated_amx, dtype="bfloat16")
    assert sum("#conv_bf16_amx" in k for k in cm.params) == 2
    got = load_module(cm)(x)[0]
    avx = load_module(build_model(_cnn(), dtype="bfloat16"))(x)[0]      # the same roundings
    fp32 = load_module(build_model(_cnn()))(x)[0]
    np.testing.assert_allclose(got, avx, rtol=1e-5, atol=1e-5)
    cos = float(got.ravel() @ fp32.ravel() / np.linalg.norm(got) / np.linalg.norm(fp32))
    assert cos >= 0.999 and np.abs(got - fp32).max() > 1e-5
