"""Bad input to the `vta` CLI: a one-line error naming the thing, the value and the fix;
a non-zero exit; no traceback and no half-written output."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from driver.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
DIGITS = str(REPO / "examples" / "digits" / "digits_cnn.onnx")
HELDOUT = str(REPO / "examples" / "digits" / "heldout.npz")


def fails(args, *words):
    """Run the CLI, expect a clean failure whose output holds every one of ``words``."""
    res = CliRunner().invoke(cli, [str(a) for a in args])
    out = res.output
    assert res.exit_code != 0, out
    assert "Traceback" not in out, out
    for w in words:
        assert w in out, f"{w!r} not in {out!r}"
    errors = [ln for ln in out.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and len(out.strip().splitlines()) <= 5, out  # one line, no dump
    return out


def ok(args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def cpu_module(tmp_path_factory):
    out = tmp_path_factory.mktemp("errs") / "digits.vtamod"
    ok(["compile", DIGITS, "-o", out, "--quiet"])
    return out


@pytest.fixture(scope="module")
def gemm(tmp_path_factory):
    out = tmp_path_factory.mktemp("gemm") / "gemm.vtaprog"
    ok(["example", "gemm", "-o", out])
    return out


@pytest.fixture
def files(tmp_path):
    np.save(tmp_path / "y.npy", np.zeros(3))
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 8, 8), np.float32))
    np.savez(tmp_path / "x.npz", image=np.zeros((1, 1, 8, 8), np.float32))
    np.savez(tmp_path / "empty.npz", images=np.zeros((0, 8, 8)), labels=np.zeros(0, int))
    d = np.load(HELDOUT)
    np.savez(tmp_path / "mismatch.npz", images=d["images"][:10], labels=d["labels"][:7])
    np.savez(tmp_path / "obj.npz", C=np.array([{"a": 1}], dtype=object))
    return tmp_path


# 1 -----------------------------------------------------------------------------------------
def test_cuda_module_without_driver(tmp_path):
    from compiler.codegen.cuda import nvrtc_available
    if not nvrtc_available():
        pytest.skip("no NVRTC to compile a CUDA module")
    try:
        from cuda.bindings import driver
        if int(driver.cuInit(0)[0]) == 0:
            pytest.skip("an NVIDIA driver is present")
    except Exception:
        pass
    out = tmp_path / "cu.vtamod"
    ok(["compile", DIGITS, "--target", "cuda", "-o", out, "--quiet"])
    fails(["run", out], str(out), "is a CUDA module and no NVIDIA driver was found",
          "--target llvm or opencl")


# 2 -----------------------------------------------------------------------------------------
def test_cuda_bad_arch(tmp_path):
    from compiler.codegen.cuda import nvrtc_available
    if not nvrtc_available():
        pytest.skip("no NVRTC")
    out = tmp_path / "bad.vtamod"
    msg = fails(["compile", DIGITS, "--target", "cuda -arch=sm_1", "-o", out],
                "sm_1", "sm_80", "sm_90")
    assert "__global__" not in msg and not out.exists()


# 3 -----------------------------------------------------------------------------------------
def test_llvm_bogus_cpu(tmp_path):
    fails(["compile", DIGITS, "--target", "llvm -mcpu=bogus", "-o", tmp_path / "m.vtamod"],
          "-mcpu=bogus", "-mcpu=native")
    assert not (tmp_path / "m.vtamod").exists()


# 4 -----------------------------------------------------------------------------------------
def test_npy_npz_swapped(cpu_module, gemm, files, tmp_path):
    fails(["run", cpu_module, "--eval", files / "y.npy"], "--eval", ".npz")
    fails(["run", cpu_module, "--input", files / "x.npz"], "--input", ".npy")
    fails(["sim", gemm, "--check", files / "y.npy"], "--check", ".npz")
    fails(["sim", gemm, "--check", files / "obj.npz"], "--check", "'C'", "Python objects")
    fails(["compile", DIGITS, "--target", "vta", "--input-shape", "image:1x1x8x8",
           "--calibrate", files / "y.npy", "-o", tmp_path / "v.vtamod"], "--calibrate", ".npz")
    assert not (tmp_path / "v.vtamod").exists()


# 5 -----------------------------------------------------------------------------------------
def test_empty_eval_and_calibration(cpu_module, files, tmp_path):
    fails(["run", cpu_module, "--eval", files / "empty.npz"], "empty.npz holds no images")
    fails(["compile", DIGITS, "--target", "vta", "--input-shape", "image:1x1x8x8",
           "--calibrate", files / "empty.npz", "-o", tmp_path / "v.vtamod"],
          "--calibrate", "holds no images")


# 6 -----------------------------------------------------------------------------------------
def test_unknown_input_name(cpu_module, files):
    fails(["run", cpu_module, "--input", f"nope={files / 'x.npy'}"],
          "the module has no input 'nope'; inputs: image")


# 7 -----------------------------------------------------------------------------------------
def test_eval_count_mismatch(cpu_module, files):
    fails(["run", cpu_module, "--eval", files / "mismatch.npz"], "10 images", "7 labels")


# 8 -----------------------------------------------------------------------------------------
def test_target_messages(tmp_path):
    fails(["compile", DIGITS, "--target", "vta -x", "-o", tmp_path / "a"], "'vta -x'", "--config")
    msg = fails(["compile", DIGITS, "--target", "opencl -x", "-o", tmp_path / "a"], "'-x'", "opencl")
    assert "cuda" not in msg
    fails(["compile", DIGITS, "--target", "tpu", "-o", tmp_path / "a"], "'tpu'", "llvm", "cuda",
          "opencl", "vta")


# 9 -----------------------------------------------------------------------------------------
def _rewrite(src: Path, dst: Path, fn) -> Path:
    d = src.read_bytes()
    hl = int.from_bytes(d[12:16], "little")
    h = json.loads(d[16:16 + hl])
    fn(h)
    hb = json.dumps(h).encode()
    dst.write_bytes(d[:12] + len(hb).to_bytes(4, "little") + hb + d[16 + hl:])
    return dst


def test_program_header_validation(gemm, tmp_path):
    bad = _rewrite(gemm, tmp_path / "d.vtaprog", lambda h: h["buffers"][0].update(dtype="int9"))
    fails(["sim", bad], "d.vtaprog", "buffer 'A'", "int9")
    bad = _rewrite(gemm, tmp_path / "s.vtaprog", lambda h: h["buffers"][0].update(shape=[10**6, 4]))
    fails(["sim", bad], "s.vtaprog", "buffer 'A'", "DRAM image")
    bad = _rewrite(gemm, tmp_path / "o.vtaprog",
                   lambda h: h["buffers"][1].update(data_offset=10**7))
    fails(["sim", bad], "o.vtaprog", "buffer 'B'", "payload")
    trailing = tmp_path / "t.vtaprog"
    trailing.write_bytes(gemm.read_bytes() + b"xyz")
    fails(["sim", trailing], "has 3 bytes more than the header says (trailing data)")
    short = tmp_path / "f.vtaprog"
    short.write_bytes(gemm.read_bytes()[:4])
    msg = fails(["sim", short], "truncated")
    assert "magic" not in msg


def test_program_file_mode_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        ok(["example", "gemm", "-o", tmp_path / "g.vtaprog"])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "g.vtaprog").stat().st_mode) == 0o644


# 10 ----------------------------------------------------------------------------------------
def test_check_shape_message(gemm, tmp_path):
    np.savez(tmp_path / "c.npz", C=np.zeros((3, 4, 1, 16), np.int8))
    res = CliRunner().invoke(cli, ["sim", str(gemm), "--check", str(tmp_path / "c.npz")])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "buffer C: shape (3,4,1,16) != (64,4,1,16)" in res.output


# 11 ----------------------------------------------------------------------------------------
def test_output_paths(cpu_module, gemm, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("keep")
    fails(["compile", DIGITS, "-o", afile], "-o/--output", str(afile), "existing file")
    assert afile.read_text() == "keep"
    fails(["hw", "export", "-o", afile / "x.v"], "-o/--output", str(afile / "x.v"))
    fails(["sim", gemm, "--plot", afile / "x.png"], "--plot", str(afile / "x.png"))
    # parent folders are created for outputs, as `vta example` does
    ok(["sim", gemm, "--trace", tmp_path / "new" / "t.json"])
    assert (tmp_path / "new" / "t.json").is_file()
    ok(["run", cpu_module, "--repeat", "1", "--save-output", tmp_path / "new2" / "y.npy"])
    assert (tmp_path / "new2" / "y.npy").is_file()


# 12 ----------------------------------------------------------------------------------------
def test_fpga_negative_clock(tmp_path):
    out = tmp_path / "fb"
    fails(["fpga", "build", "--board", "ulx3s-85f", "--clock", "-5", "--out", out],
          "--clock must be positive")
    assert not out.exists()


# 13 ----------------------------------------------------------------------------------------
def test_repeat_range_and_grammar(cpu_module):
    fails(["run", cpu_module, "--repeat", "-3"], "--repeat")
    out = ok(["run", cpu_module, "--repeat", "1"])
    assert "of 1 run (" in out


# 15, 16 ------------------------------------------------------------------------------------
def test_help_examples_and_eval_latency(cpu_module):
    text = ok(["compile", "--help"])
    assert "image:120x1x8x8 \\\n" in text
    text = ok(["run", "--help"])
    assert "examples/digits" in text and "resnet18" not in text
    out = ok(["run", cpu_module, "--eval", HELDOUT, "--eval-scale", "0.0625"])
    assert "accuracy:" in out and "ms mean per image" in out


def test_eval_images_of_the_wrong_size_for_an_accelerator_module(tmp_path):
    mod = tmp_path / "d.vtamod"
    ok(["compile", DIGITS, "--target", "vta", "--input-shape", "image:4x1x8x8", "-o", mod,
        "--calibrate", REPO / "examples" / "digits" / "calib.npz", "--calibrate-scale", "0.0625",
        "--quiet"])
    np.savez(tmp_path / "small.npz", images=np.zeros((5, 6, 6)), labels=np.zeros(5, int))
    fails(["run", mod, "--device", "fsim", "--eval", tmp_path / "small.npz"],
          "an example has 36 values", "input image takes 64 per image")
