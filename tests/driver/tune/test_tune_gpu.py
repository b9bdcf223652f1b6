"""``vta tune --target opencl``: a tiny session on the digits CNN measures GPU candidates on
the OpenCL device (PoCL here) and writes a log that ``vta compile --target opencl
--tuning-log`` applies; records name the device, so a log of another device does not apply;
``--target cuda`` without a GPU is one line naming the fix."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler.autotune.gpu_task import GpuDeviceError, gpu_target_record
from compiler.codegen.gpu import cuda
from compiler.graph_lower.gpu_space import KNOBS
from driver.runtime import load_module
from tests.cli_util import run_cli
from tests.gpu_marks import needs_opencl
from tests.models.oracle import assert_close, ort_run

DIGITS = Path(__file__).resolve().parents[3] / "examples" / "digits" / "digits_cnn.onnx"


@needs_opencl
def test_tune_opencl_then_compile_with_the_log(tmp_path):
    log = tmp_path / "gpu.jsonl"
    r = run_cli("tune", DIGITS, "--target", "opencl", "--trials", "2", "--strategy", "random",
                "--quiet", "-o", log)
    assert r.exit_code == 0, r.output
    assert "3 tasks to tune for opencl" in r.output and "measured end-to-end latency" in r.output
    records = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert len(records) == 6 and {r["key"].split("(")[0] for r in records} == {
        "gpu:conv2d_add_relu", "gpu:conv2d_add_relu_reshape", "gpu:dense_add"}
    device = gpu_target_record("opencl")
    assert all(r["target"] == device and r["error"] is None and r["costs"] for r in records)
    # the first trial of each task is its default point, the second another point
    defaults = {k.name: k.default for k in KNOBS}
    first, second = {}, {}
    for rec in records:
        (second if rec["key"] in first else first).setdefault(rec["key"], rec["config"])
    assert all(c == {k: defaults[k] for k in c} for c in first.values())
    assert all(c != first[key] for key, c in second.items())

    out = tmp_path / "m.vtamod"
    r = run_cli("compile", DIGITS, "--target", "opencl", "--tuning-log", log, "--quiet", "-o", out)
    assert r.exit_code == 0, r.output
    assert f"tuning: 3 of 3 tunable workloads covered: 3 by {log}\n" in r.output
    x = np.random.default_rng(1).standard_normal((1, 1, 8, 8)).astype("float32")
    assert_close(load_module(str(out))(x)[0], ort_run(onnx.load(DIGITS), {"image": x})[0],
                 rel=1e-4, what="digits logits with the tuned GPU log")

    # the same log measured on another device (or driver) applies to nothing here
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({**rec, "target": {**rec["target"], "driver": "0.0"}}) + "\n"
                             for rec in records))
    r = run_cli("compile", DIGITS, "--target", "opencl", "--tuning-log", other, "--quiet",
                "-o", tmp_path / "o.vtamod")
    assert r.exit_code == 0 and "tuning: 0 of 3 tunable workloads covered" in r.output


@pytest.mark.skipif(cuda.gpu_available(), reason="this machine has a CUDA GPU")
def test_tune_cuda_without_a_gpu_names_the_fix(tmp_path):
    from driver.tune.session import make_runner
    with pytest.raises(GpuDeviceError, match="no CUDA GPU on this machine.*--target opencl"):
        make_runner("cuda")
    r = run_cli("tune", DIGITS, "--target", "cuda", "-o", tmp_path / "t.jsonl")
    assert r.exit_code == 1 and "no CUDA GPU on this machine" in r.output
    assert "--target opencl" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "t.jsonl").exists()
