"""wasm-ld linking of wasm32 objects: SIMD128 code, the exports, the missing-linker message;
the wasm32 conv schedule's default register tile."""
from __future__ import annotations

import pytest

from compiler.codegen.llvm.wasm_link import WasmLinkError, find_wasm_ld, link_wasm
from tests.driver.web_util import DIGITS, needs_wasm_ld


@pytest.fixture(scope="module")
def digits_wasm32():
    from compiler import build_model
    return build_model(DIGITS, target="wasm32", executor="aot")


@pytest.fixture(scope="module")
def digits_object(digits_wasm32):
    return digits_wasm32.files["model.o"]


def test_wasm32_conv_default_is_two_vectors_of_channels(digits_wasm32):
    """conv2 has 16 output channels: packed in blocks of 8 (2 x 4 lanes) for wasm32, not
    the 16 (one AVX-512 vector) of x86-64."""
    params = {r["name"] for c in digits_wasm32.graph_json["calls"] for r in c["args"]
              if r["kind"] == "param"}
    assert "c2_w#conv:8" in params and "c2_w#conv:16" not in params


@needs_wasm_ld
def test_linked_module_exports_entry_and_uses_simd128(digits_object):
    wasmtime = pytest.importorskip("wasmtime", reason="PyPI package 'wasmtime' is not installed")
    wasm = link_wasm([digits_object], ["vtamod_run"])
    module = wasmtime.Module(wasmtime.Engine(), wasm)
    assert {e.name for e in module.exports} == {"memory", "__heap_base", "vtamod_run"}
    assert [i.name for i in module.imports] == []          # digits calls no libm function
    config = wasmtime.Config()
    config.wasm_simd = False
    config.wasm_relaxed_simd = False
    with pytest.raises(wasmtime.WasmtimeError, match="SIMD"):   # the kernels use v128 ops
        wasmtime.Module(wasmtime.Engine(config), wasm)


def test_missing_wasm_ld_names_the_debian_package(monkeypatch, tmp_path):
    monkeypatch.delenv("WASM_LD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(WasmLinkError, match=r"needs wasm-ld, which is not on PATH; install it "
                                            r"with `apt-get install lld`"):
        find_wasm_ld()
    monkeypatch.setenv("WASM_LD", "no-such-linker")
    with pytest.raises(WasmLinkError, match=r"WASM_LD='no-such-linker' is not an executable"):
        find_wasm_ld()


@needs_wasm_ld
def test_link_refuses_a_non_wasm_object_and_a_bad_stack():
    with pytest.raises(WasmLinkError, match=r"object 0 is not a wasm object .*target 'wasm32'"):
        link_wasm([b"\x7fELF" + bytes(60)], [])
    with pytest.raises(ValueError, match=r"stack_bytes must be a positive multiple of 16, not 10"):
        link_wasm([], [], stack_bytes=10)
