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
from vta_hw.program_file import checksum
from tests.driver.web_util import needs_wasm_ld

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
    from compiler.codegen.gpu.cuda import nvrtc_available
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
    fails(["run", out], str(out), "is a CUDA module and no usable NVIDIA driver or device was found",
          "--target llvm or opencl")


# 2 -----------------------------------------------------------------------------------------
def test_cuda_bad_arch(tmp_path):
    from compiler.codegen.gpu.cuda import nvrtc_available
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
    (tmp_path / "empty.npy").write_bytes(b"")            # 0 bytes: numpy raises EOFError
    fails(["run", cpu_module, "--input", f"image={tmp_path / 'empty.npy'}"],
          f"--input {tmp_path / 'empty.npy'}: cannot read it as an .npy array")
    fails(["run", cpu_module, "--eval", tmp_path / "empty.npy"], "--eval", "empty.npy")


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
    h["crc32"] = checksum(h, d[16 + hl:])   # a consistent file: the loader's checks must see it
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


# trial 2 (a user's walk through the accelerator flow) --------------------------------------
def _tiny_conv_onnx(path, batch="N"):
    """conv 16->16 + relu with a dynamic (or fixed) batch dimension."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 16, 3, 3))
                                .astype(np.float32) * 0.1, "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 16, 4, 4])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def vta_module(tmp_path_factory):
    out = tmp_path_factory.mktemp("vtamod") / "digits_vta.vtamod"
    ok(["compile", DIGITS, "--target", "vta", "--input-shape", "image:4x1x8x8", "-o", out,
        "--calibrate", REPO / "examples" / "digits" / "calib.npz", "--calibrate-scale", "0.0625",
        "--quiet"])
    return out


def _copy_module(src, dst):
    import shutil
    shutil.copytree(src, dst)
    return dst


def test_unwritable_output_fails_before_the_work(cpu_module, gemm, tmp_path):
    """an output in a place nobody can write (/proc) is refused up front, naming the option"""
    fails(["compile", DIGITS, "--target", "vta", "-o", "/proc/m.vtamod"],
          "-o/--output /proc/m.vtamod", "cannot write", "writable")
    fails(["example", "gemm", "-o", "/proc/g.vtaprog"], "-o/--output /proc/g.vtaprog")
    fails(["sim", gemm, "--trace", "/proc/t.json"], "--trace /proc/t.json", "cannot write")
    fails(["run", cpu_module, "--save-output", "/proc/y.npy"], "--save-output /proc/y.npy")
    fails(["compile", DIGITS, "--target", "wasm32", "--executor", "aot", "--wasm",
           "/proc/d.wasm", "-o", tmp_path / "w.vtamod"], "--wasm /proc/d.wasm", "cannot write")
    assert not (tmp_path / "w.vtamod").exists()                       # refused before the build
    fails(["tune", DIGITS, "-o", tmp_path / "t.jsonl", "--plot", "/proc/t.png"],
          "--plot /proc/t.png", "cannot write")
    assert not (tmp_path / "t.jsonl").exists()


@needs_wasm_ld
def test_missing_output_parents_are_created_for_every_output(tmp_path):
    """-o, --wasm and --plot alike create missing parent folders (as `vta example` does)"""
    wasm = tmp_path / "new" / "deeper" / "d.wasm"
    ok(["compile", DIGITS, "--target", "wasm32", "--executor", "aot", "--wasm", wasm,
        "-o", tmp_path / "other" / "w.vtamod", "--quiet"])
    assert wasm.read_bytes()[:4] == b"\0asm"


def test_plot_suffix_is_checked(gemm, tmp_path):
    fails(["sim", gemm, "--plot", tmp_path / "t.txt"], "--plot", "suffix .txt", ".png")
    fails(["sim", gemm, "--plot", tmp_path / "t"], "--plot", "no suffix", ".png")
    assert not list(tmp_path.iterdir())


def test_damaged_module_files(cpu_module, vta_module, tmp_path):
    """truncated params.npz / kernels.so / graph.json (an interrupted copy): one-line errors,
    not a zipfile traceback or a SIGBUS from dlopen"""
    c = _copy_module(cpu_module, tmp_path / "c.vtamod")
    (c / "params.npz").write_bytes((cpu_module / "params.npz").read_bytes()[:300])
    fails(["run", c], "params.npz", "truncated or damaged", "vta compile")
    c = _copy_module(cpu_module, tmp_path / "k.vtamod")
    (c / "kernels.so").write_bytes((cpu_module / "kernels.so").read_bytes()[:3000])
    fails(["run", c], "kernels.so", "truncated", "vta compile")
    (c / "kernels.so").write_text("not a library")
    fails(["run", c], "kernels.so", "not a 64-bit", "vta compile")
    v = _copy_module(vta_module, tmp_path / "v.vtamod")
    (v / "params.npz").write_bytes((vta_module / "params.npz").read_bytes()[:300])
    fails(["run", v, "--device", "fsim"], "params.npz", "truncated or damaged")
    (v / "params.npz").unlink()
    fails(["run", v, "--device", "fsim"], "no params.npz", "vta compile")
    v = _copy_module(vta_module, tmp_path / "g.vtamod")
    (v / "graph.json").write_text((vta_module / "graph.json").read_text()[:300])
    fails(["run", v, "--device", "fsim"], "graph.json is not valid JSON", "vta compile")
    v = _copy_module(vta_module, tmp_path / "p.vtamod")
    victim = sorted((v / "programs").iterdir())[0]
    victim.unlink()
    fails(["run", v, "--device", "fsim"], f"no programs/{victim.name}", "vta compile")


def test_compile_replaces_a_module_whole_and_never_another_folder(tmp_path, monkeypatch):
    out = tmp_path / "m.vtamod"
    ok(["compile", DIGITS, "-o", out, "--quiet"])
    (out / "stale.txt").write_text("from an earlier build")
    # a failure while writing leaves the earlier module as it was, and no partial folder
    # (the library writes every file into a hidden folder beside -o, then the manifest)
    from compiler.graph_lower import module_file

    def broken_manifest(cm, files):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(module_file, "manifest", broken_manifest)
    fails(["compile", DIGITS, "--target", "vta", "-o", out], "No space left")
    assert (out / "kernels.so").is_file() and (out / "stale.txt").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.vtamod"]
    monkeypatch.undo()
    ok(["compile", DIGITS, "--target", "vta", "-o", out, "--quiet"])
    assert not (out / "stale.txt").exists() and (out / "programs").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.vtamod"]
    # a folder that is not a module is never written into (or replaced)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("mine")
    fails(["compile", DIGITS, "-o", tmp_path / "data"], "-o/--output", "no compiled module")
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["keep.txt"]


def test_vta_compile_config_shapes_and_calibration(tmp_path):
    model = _tiny_conv_onnx(str(tmp_path / "tiny.onnx"))
    out = tmp_path / "t.vtamod"
    # a bad preset fails first, naming the option, before any calibration warning
    text = fails(["compile", model, "--target", "vta", "--config", "nope", "-o", out],
                 "--config nope", "presets:", "1x4_i8w8a32_10_10_10_11_bus32")
    assert "warning" not in text
    # a dynamic batch defaults to 1, as for --target llvm
    text = ok(["compile", model, "--target", "vta", "-o", out, "--quiet"])
    assert "input  x: float32[1, 16, 4, 4]" in text
    fails(["compile", model, "--target", "vta", "--input-shape", "x:1x16x4x4",
           "--input-shape", "x:2x16x4x4", "-o", out], "'x' given twice")
    cases = {"wrongname.npz": dict(foo=np.zeros((4, 16, 4, 4), np.float32)),
             "shape.npz": dict(x=np.zeros((4, 3, 4, 4), np.float32)),
             "nan.npz": dict(x=np.full((4, 16, 4, 4), np.nan, np.float32)),
             "text.npz": dict(x=np.array(["a", "b"]))}
    words = {"wrongname.npz": ["no array for input 'x'", "it has foo", "x=samples"],
             "shape.npz": ["[4, 3, 4, 4]", "[N, 16, 4, 4]"],
             "nan.npz": ["NaN", "finite"],
             "text.npz": ["numeric"]}
    for name, arrays in cases.items():
        np.savez(tmp_path / name, **arrays)
        fails(["compile", model, "--target", "vta", "--calibrate", tmp_path / name,
               "-o", tmp_path / "c.vtamod"], "--calibrate", name, *words[name])
        assert not (tmp_path / "c.vtamod").exists()
    np.savez(tmp_path / "flat.npz", x=np.ones((4, 256), np.float32))
    ok(["compile", model, "--target", "vta", "--calibrate", tmp_path / "flat.npz", "-o",
        tmp_path / "c.vtamod", "--quiet"])


def test_vta_run_input_shape_names_the_fix(vta_module, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 8, 8), np.float32))
    fails(["run", vta_module, "--device", "fsim", "--input", tmp_path / "x.npy"],
          "[1, 3, 8, 8]", "[4, 1, 8, 8]", "--input-shape image:1x3x8x8")


def test_an_input_file_of_the_wrong_shape_fails_before_its_input_line(cpu_module, vta_module,
                                                                      tmp_path):
    """no 'input image: float32[1, 1, 8, 8] from file' line for a [1, 8, 8] file"""
    np.save(tmp_path / "x.npy", np.zeros((1, 8, 8), np.float32))
    for module in (cpu_module, vta_module):
        out = fails(["run", module, "--device", "fsim", "--input", tmp_path / "x.npy"]
                    if module == vta_module else ["run", module, "--input", tmp_path / "x.npy"],
                    "input 'image' has shape [1, 8, 8], the module was compiled for")
        assert "input image:" not in out, out


def test_unscaled_eval_pixels_name_eval_scale_first(vta_module):
    """heldout.npz holds uint8 pixels 0-16, the module was calibrated on pixel / 16: the range
    warning names --eval-scale before recalibrating; with --eval-scale given, it does not"""
    res = CliRunner().invoke(cli, ["run", str(vta_module), "--device", "fsim", "--eval", HELDOUT])
    assert res.exit_code == 0, res.output
    warns = [ln for ln in res.output.splitlines() if ln.startswith("warning:")]
    assert len(warns) == 1, res.output
    assert warns[0].index("--eval-scale S scales the data (e.g. --eval-scale 0.0625 for pixels "
                          "0-16") < warns[0].index("compile with --calibrate"), warns[0]
    res = CliRunner().invoke(cli, ["run", str(vta_module), "--device", "fsim", "--eval", HELDOUT,
                                   "--eval-scale", "1"])
    assert res.exit_code == 0 and "--eval-scale S" not in res.output, res.output
    assert "compile with --calibrate samples like these" in res.output


def test_integer_calibration_data_names_calibrate_scale_once(tmp_path):
    out = tmp_path / "m.vtamod"
    args = ["compile", DIGITS, "--target", "vta", "--calibrate", HELDOUT, "--quiet", "-o", out]
    text = ok(args)
    warns = [ln for ln in text.splitlines() if ln.startswith("warning:")]
    assert warns == [f"warning: --calibrate {HELDOUT}: array 'images' holds uint8 values (0..16) "
                     "for float input 'image', used as they are; --calibrate-scale S scales the "
                     "data (e.g. --calibrate-scale 0.0625 for pixels 0-16, as the demo uses)"]
    assert "warning:" not in ok(args + ["--calibrate-scale", "1"])


def test_looks_unscaled():
    from driver.cli.scale_hint import looks_unscaled
    assert looks_unscaled(np.arange(4, dtype=np.uint8))
    assert looks_unscaled(np.array([0.0, 16.0], np.float32), (-2.0, 2.0))   # 8x the bound
    assert not looks_unscaled(np.array([0.0, 3.0], np.float32), (-2.0, 2.0))
    assert not looks_unscaled(np.array([0.0, 16.0], np.float32))            # no range known


def test_fsim_and_tsim_print_the_same_dram_bytes(vta_module):
    import re
    dram = {}
    for dev in ("fsim", "tsim"):
        text = ok(["run", vta_module, "--device", dev])
        dram[dev] = re.search(rf"device {dev}: .*DRAM (\d+) B", text).group(1)
        assert re.search(r"conv2 .* DRAM \d+ B", text), text
    assert dram["fsim"] == dram["tsim"]


def test_python_dash_m_runs_the_cli(tmp_path):
    """`python -m driver.cli` (and `-m driver.cli.main`) run the command, not nothing"""
    import subprocess
    import sys
    for mod in ("driver.cli", "driver.cli.main"):
        r = subprocess.run([sys.executable, "-m", mod, "info", "--json"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and json.loads(r.stdout)["config"], (mod, r.stdout, r.stderr)
    r = subprocess.run([sys.executable, "-m", "driver.cli", "info", "--config", "nope"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Error: --config nope: " in r.stderr    # a usage error
    assert "Traceback" not in r.stderr


def test_input_shape_rank_and_name_errors_show_the_cli_fix(tmp_path):
    model = _tiny_conv_onnx(str(tmp_path / "tiny.onnx"))
    for target in ("llvm", "vta"):
        fails(["compile", model, "--target", target, "--input-shape", "x:1x16", "-o",
               tmp_path / "m.vtamod"], "rank 2", "Nx16x4x4", "--input-shape x:1x16x4x4")
        fails(["compile", model, "--target", target, "--input-shape", "y:1x16x4x4", "-o",
               tmp_path / "m.vtamod"], "['y']", "['x']", "--input-shape")


def test_missing_files_are_one_error_line_exit_1_everywhere(gemm, tmp_path):
    """a path that does not exist is bad input (`Error: ...`, exit 1) for every command"""
    none = tmp_path / "none.vtaprog"
    for args in (["sim", none], ["disasm", none], ["sim", gemm, "--check", tmp_path / "n.npz"],
                 ["run", tmp_path / "none.vtamod"], ["compile", tmp_path / "n.onnx", "-o",
                                                     tmp_path / "m.vtamod"]):
        res = CliRunner().invoke(cli, [str(a) for a in args])
        assert res.exit_code == 1 and "Usage:" not in res.output, (args, res.output)
        assert res.output.startswith("Error: ") and len(res.output.strip().splitlines()) == 1


def test_missing_input_files_fail_before_any_work(tmp_path):
    """no calibration warning (or model import) before the missing file's error"""
    for option, fix in (("--tuning-log", "write one with `vta tune MODEL -o LOG`"),
                        ("--calibrate", "give an .npz (np.savez) of samples")):
        none = tmp_path / "none.x"
        out = fails(["compile", DIGITS, "--target", "vta", option, none, "-o",
                     tmp_path / "m.vtamod"], f"Error: {option} {none}: does not exist; {fix}")
        assert "warning" not in out, out
        assert CliRunner().invoke(cli, ["compile", DIGITS, "--target", "vta", option, str(none),
                                        "-o", str(tmp_path / "m.vtamod")]).exit_code == 1
    assert not (tmp_path / "m.vtamod").exists()


def test_an_onnx_model_given_to_run_says_to_compile_it(tmp_path):
    res = CliRunner().invoke(cli, ["run", DIGITS])
    assert res.exit_code == 2
    assert f"MODULE {DIGITS} is an ONNX model, not a compiled module folder; compile it " \
           f"first: vta compile {DIGITS}" in res.output


def test_a_malformed_input_shape_is_a_usage_error_before_work(tmp_path):
    for cmd in (["compile", DIGITS, "-o", tmp_path / "m.vtamod"], ["tune", DIGITS, "-o",
                                                                   tmp_path / "t.jsonl"]):
        res = CliRunner().invoke(cli, [str(a) for a in cmd] + ["--input-shape", "image:axb"])
        assert res.exit_code == 2, res.output
        assert "Invalid value for '--input-shape'" in res.output
        assert "input shape must look like name:1x3x224x224" in res.output
    assert not list(tmp_path.iterdir())


def test_bad_option_values_are_usage_errors_naming_the_option(cpu_module, tmp_path):
    """one convention: an unknown --target, --device or --config is exit 2 (as click's own
    checks), its message names the option, the value and the valid ones"""
    for args, words in (
            (["compile", DIGITS, "--target", "tpu", "-o", tmp_path / "a"],
             ("--target 'tpu': unknown target", "llvm", "cuda", "opencl", "vta")),
            (["tune", DIGITS, "--target", "tpu", "-o", tmp_path / "t.jsonl"],
             ("--target 'tpu': unknown target", "llvm", "cuda", "opencl", "vta")),
            (["run", cpu_module, "--device", "tpu"], ("'--device'", "'tpu'", "fsim", "tsim")),
            (["info", "--config", "bogus"], ("--config bogus:", "presets:"))):
        res = CliRunner().invoke(cli, [str(a) for a in args])
        assert res.exit_code == 2, (args, res.output)
        assert "Traceback" not in res.output
        for w in words:
            assert w in res.output, (w, res.output)
    assert not list(tmp_path.iterdir())


def test_options_that_do_not_apply_together_are_usage_errors(tmp_path):
    """exit 2 (README: options that do not apply together), naming the options given"""
    out = tmp_path / "m.vtamod"
    for args, words in (
            (["--per-channel"], ("Error: --per-channel applies to --target vta only, not "
                                 "--target 'llvm'", "add --target vta")),
            (["--per-channel", "--cpu-target", "llvm"],
             ("--per-channel and --cpu-target apply to --target vta only", "drop them")),
            (["--place", "dense=cpu"], ("Error: --place applies to --target vta only",
                                        "add --target vta")),
            (["--target", "vta", "--executor", "aot"],
             ("--executor aot builds CPU modules", "not --target 'vta'", "--executor graph")),
            (["--clock-mhz", "50"], ("--clock-mhz applies to --target vta only",)),
            (["--target", "vta", "--clock-mhz", "50"],
             ("--clock-mhz and --cpu-gmacs apply to --placement cost only",))):
        res = CliRunner().invoke(cli, ["compile", DIGITS, "-o", str(out)] + args)
        assert res.exit_code == 2, (args, res.output)
        assert "Traceback" not in res.output
        for w in words:
            assert w in res.output, (w, res.output)
    assert not out.exists()


def test_place_errors_name_the_option_and_the_value(tmp_path):
    """--place speaks CLI words (not the library's force[...]), exit 2, before any work"""
    out = tmp_path / "m.vtamod"
    for item, words in (
            ("dense=gpu", ("Error: --place dense=gpu: SIDE must be cpu or vta, not 'gpu'",)),
            ("fc=cpu", ("Error: --place fc=cpu: 'fc' is not an op type",
                        "op type (conv2d, dense, add), not a node name")),
            ("dense", ("Error: --place dense: takes OP=SIDE, e.g. --place dense=cpu",))):
        res = CliRunner().invoke(cli, ["compile", DIGITS, "--target", "vta", "--place", item,
                                       "-o", str(out)])
        assert res.exit_code == 2, (item, res.output)
        assert "force[" not in res.output and "Traceback" not in res.output
        for w in words:
            assert w in res.output, (w, res.output)
    assert not out.exists()


def test_place_reads_op_types_case_and_spaces_alike():
    import click

    from driver.cli.options import check_place
    ctx = click.Context(click.Command("compile"))
    assert check_place(ctx, None, ("dense=cpu", " Conv2d = VTA ")) == {"dense": "cpu",
                                                                      "conv2d": "vta"}
    assert check_place(ctx, None, ()) == {}


def test_missing_module_and_program_say_they_do_not_exist(tmp_path):
    fails(["run", tmp_path / "nothere.vtamod"], f"{tmp_path / 'nothere.vtamod'}' does not exist",
          "vta compile")
    fails(["sim", tmp_path / "nothere.vtaprog"],
          f"PROGRAM {tmp_path / 'nothere.vtaprog'}: no such file", "vta example gemm")


def test_a_file_that_is_no_program_says_where_programs_come_from(gemm, tmp_path):
    for cmd in ("sim", "disasm"):
        fails([cmd, HELDOUT], f"PROGRAM {HELDOUT}: not a VTA program file (bad magic",
              "write one with `vta example gemm -o F.vtaprog`",
              "programs/ folder of a module that `vta compile --target vta` wrote")
    damaged = tmp_path / "cut.vtaprog"       # a program file, cut short: its own message only
    damaged.write_bytes(gemm.read_bytes()[:20])
    assert "vta example gemm" not in fails(["sim", damaged], "truncated")


def test_a_folder_that_refuses_files_is_not_called_missing():
    """/proc exists: creating a file there fails with ENOENT, which must not read as
    '/proc: No such file or directory'"""
    out = fails(["example", "gemm", "-o", "/proc/x.vtaprog"], "-o/--output /proc/x.vtaprog",
                "the folder exists but does not take new files")
    assert "No such file" not in out


@pytest.mark.parametrize("suffix", [".onnx", ".pt", ".npz"])
def test_compile_refuses_an_output_named_like_a_model(tmp_path, suffix):
    out = tmp_path / f"digits{suffix}"
    fails(["compile", DIGITS, "-o", out], f"-o/--output {out}: ends in {suffix}",
          f"-o {tmp_path / 'digits.vtamod'}")
    assert not out.exists()
