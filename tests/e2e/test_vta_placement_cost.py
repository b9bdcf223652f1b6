"""Placement by cost (``compiler.quant.placement``): a big dense layer at batch 1 is DRAM-bound on
the accelerator (each weight used once) and goes to the CPU, a conv that reuses its weights stays
on the accelerator; the module's output is still the quantized oracle's, bit for bit. Forcing a
side per op type works under either placement, and the CLI prints the decisions."""
import numpy as np
import onnx
import pytest

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from compiler.quant.cpu_timing import kernel_seconds
from compiler.quant.placement import Placement, PlacementError, program_cycles
from driver.placement import cost_placement, cycle_model_cycles
from driver.runtime import load_module
from tests.cli_util import run_cli
from tests.models.builders import OnnxBuilder, _io

#: the dense: 1024 x 512 int8 weights, each read once per inference at batch 1
DENSE_IN, DENSE_OUT = 16 * 8 * 8, 512


def _model():
    """stem conv 3 -> 16 (CPU under the channel rule), conv 16 -> 16, flatten, dense 1024 -> 512."""
    b = OnnxBuilder(0)
    x = b.node("Relu", [b.conv("input", 3, 16, 3, bias=True)])
    x = b.node("Relu", [b.conv(x, 16, 16, 3, bias=True)])
    x = b.dense(b.node("Flatten", [x]), DENSE_IN, DENSE_OUT)
    return b.model([_io("input", [1, 3, 8, 8])], [_io(x, None)], 13)


def _calib():
    return {"input": np.random.default_rng(1).standard_normal((4, 3, 8, 8)).astype(np.float32)}


def _sides(cm):
    return {n.name: n.target for n in cm.plan.qgraph.nodes if n.op in (QOp.CONV2D, QOp.DENSE)}


def _check_module(cm, tmp_path):
    m = load_module(cm.save(str(tmp_path / "m.vtamod")), device="tsim")
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(m(x)[0], run_oracle(cm.plan.qgraph, {"input": x})[0])


def test_big_dense_at_batch_1_goes_to_the_cpu_under_cost_placement(tmp_path):
    # a stated host of 2 GMAC/s: the dense's 0.5 M MACs take 262 us there; on the accelerator
    # its 0.5 MB of weights cross the 8-byte bus once, >= 65536 cycles = 1311 us at 50 MHz
    place, line = cost_placement(None, clock_mhz=50.0, cpu_gmacs=2.0)
    assert line.startswith("placement cost: accelerator at 50 MHz (stated), cycles from the cycle model")
    cm = build_model(_model(), target="vta", calib=_calib(), placement=place)
    assert _sides(cm) == {"conv0": "cpu", "conv1": "vta", "gemm0": "cpu"}
    dec = {d["name"]: d for d in cm.stats["placement"]}
    assert set(dec) == {"conv1", "gemm0"}     # the stem conv is not the accelerator's to weigh
    d = dec["gemm0"]
    assert d["vta_cycles"] >= DENSE_IN * DENSE_OUT / 8
    assert d["vta_s"] == pytest.approx(d["vta_cycles"] / 50e6)
    assert d["cpu_s"] == pytest.approx(DENSE_IN * DENSE_OUT / 2e9)
    assert d["vta_s"] > d["cpu_s"] and dec["conv1"]["vta_s"] < dec["conv1"]["cpu_s"]
    _check_module(cm, tmp_path)


def test_forcing_a_side_per_op_type(tmp_path):
    cm = build_model(_model(), target="vta", calib=_calib(), force={"dense": "cpu", "conv2d": "vta"})
    assert _sides(cm) == {"conv0": "vta", "conv1": "vta", "gemm0": "cpu"}
    assert {d["name"]: (d["side"], d["reason"]) for d in cm.stats["placement"]} == {
        "conv0": ("vta", "forced"), "conv1": ("vta", "forced"), "gemm0": ("cpu", "forced")}
    _check_module(cm, tmp_path)
    # under cost placement too, the forced side wins over the times
    cm = build_model(_model(), target="vta", calib=_calib(), placement="cost", clock_mhz=1e6,
                     force={"dense": "cpu"})
    assert _sides(cm)["gemm0"] == "cpu"


def test_measured_cpu_time_and_the_compilers_cycle_estimate():
    cm = build_model(_model(), target="vta", calib=_calib(), force={"dense": "vta"})
    qg = cm.plan.qgraph
    i = next(k for k, n in enumerate(qg.nodes) if n.op is QOp.DENSE)
    s = kernel_seconds(qg, i)
    assert 0 < s < 1.0
    prog = cm.plan.programs[i]
    # the serial estimate counts every DMA and uop without overlap: a DRAM-bound dense is
    # within a few percent of the cycle model
    model = cycle_model_cycles(prog)
    assert model > DENSE_IN * DENSE_OUT / 8
    assert 0.9 * model <= program_cycles(prog) <= 1.2 * model


@pytest.mark.parametrize("kw, message", [
    ({"kind": "fastest"}, "placement must be one of supported, cost, not 'fastest'"),
    ({"kind": "cost"}, "placement 'cost' needs the accelerator clock: clock_mhz must be a positive"),
    ({"force": {"pool": "cpu"}}, "op type must be one of conv2d, dense, add (the accelerator runs "
                                 "no other), not 'pool'"),
    ({"force": {"dense": "gpu"}}, "force['dense'] must be 'cpu' or 'vta', not 'gpu'"),
    ({"kind": "cost", "clock_mhz": 50, "cpu_gmacs": 0}, "cpu_gmacs must be a positive number"),
])
def test_bad_placement_options_name_the_option_and_the_value(kw, message):
    with pytest.raises(PlacementError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        Placement(**kw)


def test_cli_prints_the_decisions(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    r = run_cli("compile", path, "--target", "vta", "--placement", "cost", "--cpu-gmacs", "2",
                "--cycles", "estimate", "--place", "add=cpu", "--quiet", "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 0, r.output
    assert "placement cost: accelerator at 50 MHz (pynq-z1's clock), cycles from the compiler " \
           "estimate, 2 GMAC/s (stated host)" in r.output
    rows = {ln.split()[0]: ln.split()[-1] for ln in r.output.splitlines()
            if ln.strip().startswith(("conv1 ", "gemm0 ")) and "int8" not in ln}
    assert rows == {"conv1": "vta", "gemm0": "cpu"}
    r = run_cli("compile", path, "--target", "vta", "--place", "dense=tpu", "-o", tmp_path / "x")
    assert r.exit_code == 2 and "--place dense=tpu: SIDE must be cpu or vta, not 'tpu'" in r.output
    r = run_cli("compile", path, "--place", "dense=cpu", "-o", tmp_path / "y")
    assert r.exit_code == 2 and "--place applies to " \
                                "--target vta only" in r.output
