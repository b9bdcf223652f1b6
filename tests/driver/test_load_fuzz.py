"""Property: whatever bytes a ``.vtaprog`` file or a module folder holds, loading (and, for
a module that loads, running) ends in success or one of the project's own errors
(``VtaError``): never another exception, never a hang. Edits of module parts come both
as they are (the hashes catch them) and with the manifest made to match (a consistent
forgery, which the loader's own checks must catch)."""
from __future__ import annotations

import contextlib
import json
import shutil
import signal
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import build_model
from compiler.quant.calibration import RandomCalibrationWarning
from driver.runtime import load_module
from driver.runtime.source import manifest_digest, sha256
from vta_hw import program_file
from vta_hw.config import load_config
from vta_hw.errors import VtaError
from vta_hw.isa import Finish, Load, MemId, Uop
from vta_hw.program import DramLayout, Program

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits" / "digits_cnn.onnx"
CASE_S = 10   # a case that takes longer than this is a hang
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
FUZZ_MODULE = settings(FUZZ, max_examples=20)   # each case copies, loads and runs a module

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=8)


@contextlib.contextmanager
def bounded(seconds: float = CASE_S):
    """Fail (TimeoutError) instead of hanging when the body runs past ``seconds``."""
    def alarm(*_):
        raise TimeoutError(f"a case ran past {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def outcome(fn) -> str:
    """'ok' or 'refused' (a VtaError); any other exception propagates and fails the test."""
    with bounded():
        try:
            fn()
            return "ok"
        except VtaError:
            return "refused"


# ---- .vtaprog -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def prog_bytes() -> bytes:
    cfg = load_config("1x8_i8w8a32_11_12_13_14")
    lay = DramLayout(cfg)
    x = lay.alloc("x", (4, 1, 8), "int8", "input", np.ones((4, 1, 8), np.int8))
    ub = lay.alloc_uops(2)
    p = lay.finish([Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2),
                    Load(mem=MemId.INP, dram_base=lay.elem(x, "inp"), y_size=1, x_size=4,
                         x_stride=4), Finish()], [Uop(0, 0, 0), Uop(1, 1, 0)])
    return program_file.to_bytes(p)


def _load_prog(tmp_path, data: bytes):
    path = tmp_path / "f.vtaprog"
    path.write_bytes(data)
    return outcome(lambda: Program.load(path))


@FUZZ
@given(data=st.binary(max_size=400))
def test_random_bytes(tmp_path, prog_bytes, data):
    _load_prog(tmp_path, data)
    _load_prog(tmp_path, prog_bytes[:16] + data)     # a valid prelude, garbage after


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1,
                      max_size=4))
def test_random_byte_changes(tmp_path, prog_bytes, flips):
    data = bytearray(prog_bytes)
    for pos, byte in flips:
        data[pos % len(data)] = byte
    _load_prog(tmp_path, bytes(data))


@FUZZ
@given(key=st.sampled_from(["config", "n_insns", "n_uops", "insn_base", "uop_base",
                            "dram_bytes", "buffers", "payload_bytes", "crc32", "extra"]),
       value=json_values, sub=st.integers(0, 20), fix_crc=st.booleans())
def test_random_header_edits(tmp_path, prog_bytes, key, value, sub, fix_crc):
    hlen = int.from_bytes(prog_bytes[12:16], "little")
    h, payload = json.loads(prog_bytes[16:16 + hlen]), prog_bytes[16 + hlen:]
    if key in ("config", "buffers") and sub % 2:       # edit inside: a field of the config,
        inner = h[key] if key == "config" else h[key][0]   # or of the first buffer
        inner[sorted(inner)[sub % len(inner)]] = value
    else:
        h[key] = value
    if fix_crc:
        h["crc32"] = program_file.checksum(h, payload)
    hb = json.dumps(h, sort_keys=True).encode()
    _load_prog(tmp_path, prog_bytes[:12] + len(hb).to_bytes(4, "little") + hb + payload)


# ---- module folders ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """target -> the digits model compiled for it (built on first use)."""
    cache = {}

    def get(target: str) -> Path:
        if target not in cache:
            out = tmp_path_factory.mktemp("fuzzmod") / f"d_{target}.vtamod"
            with warnings.catch_warnings():    # the files are fuzzed, not the accuracy
                warnings.simplefilter("ignore", RandomCalibrationWarning)
                build_model(str(DIGITS), target=target).save(str(out))
            cache[target] = out
        return cache[target]
    return get


@pytest.fixture(params=["llvm", "vta"])
def module(request, compiled) -> Path:
    """The digits model for the CPU, or for the accelerator (run on fsim)."""
    return compiled(request.param)


def _with_part(module: Path, dst: Path, name: str, data: bytes, rehash: bool) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(module, dst)
    (dst / name).write_bytes(data)
    if rehash:
        man = json.loads((dst / "manifest.json").read_text())
        man["files"][name] = sha256(data)
        man["digest"] = manifest_digest(man)
        (dst / "manifest.json").write_text(json.dumps(man))
    return dst


def _load_and_run(folder: Path):
    vta = (folder / "programs").is_dir()

    def go():
        m = load_module(folder, device="fsim") if vta else load_module(folder)
        feed = {n: np.zeros(s, d) for n, s, d in m.input_info()}
        m(**feed)
    return outcome(go)


def _paths(doc, prefix=()):
    """Every (path) to a value inside the JSON document ``doc``."""
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) \
        else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


@FUZZ_MODULE
@given(pick=st.integers(0, 10**6), value=json_values, delete=st.booleans(),
       rehash=st.booleans())
def test_random_graph_edits(tmp_path, module, pick, value, delete, rehash):
    g = json.loads((module / "graph.json").read_text())
    paths = [p for p in _paths(g) if p]
    path = paths[pick % len(paths)]
    parent = g
    for k in path[:-1]:
        parent = parent[k]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    folder = _with_part(module, tmp_path / "m.vtamod", "graph.json", json.dumps(g).encode(),
                        rehash)
    result = _load_and_run(folder)
    assert rehash or result == "refused"      # an edit the manifest does not know: refused


@FUZZ_MODULE
@given(arrays=st.dictionaries(
    st.sampled_from(["n0.c0", "n0.c1", "n2.c0", "n4.c0", "x"]),
    st.tuples(st.lists(st.integers(0, 5), max_size=4),
              st.sampled_from(["float32", "float64", "int8", "int32"])), max_size=5),
    keep=st.booleans(), rehash=st.booleans())
def test_random_params(tmp_path, module, arrays, keep, rehash):
    with np.load(module / "params.npz") as z:
        params = {k: z[k] for k in z.files} if keep else {}
    for name, (shape, dtype) in arrays.items():
        params[name] = np.ones(shape, dtype)
    np.savez(tmp_path / "p.npz", **params)
    folder = _with_part(module, tmp_path / "m.vtamod", "params.npz",
                        (tmp_path / "p.npz").read_bytes(), rehash)
    _load_and_run(folder)


@FUZZ_MODULE
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1,
                      max_size=3), which=st.integers(0, 10))
def test_random_program_edits(tmp_path, compiled, flips, which):
    module = compiled("vta")
    progs = sorted((module / "programs").glob("*.vtaprog"))
    prog = progs[which % len(progs)]
    data = bytearray(prog.read_bytes())
    for pos, byte in flips:
        data[pos % len(data)] = byte
    folder = _with_part(module, tmp_path / "m.vtamod", f"programs/{prog.name}", bytes(data),
                        rehash=True)
    _load_and_run(folder)
