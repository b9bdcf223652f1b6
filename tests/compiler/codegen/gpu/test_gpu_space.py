"""The GPU template's config space (graph_lower/gpu_space.py): the default point prints the
untuned kernels, every knob changes the kernel source and the kernels still compute the same
values (OpenCL on PoCL, against the default point and against onnxruntime), and CUDA source
at a non-default point compiles with nvcc."""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest

from compiler.build_model import build_model, import_model
from compiler.codegen.gpu import c_source, cuda, opencl
from compiler.graph import Op, optimize
from compiler.graph_lower.gpu import declare_target, gpu_space, gpu_stages
from compiler.graph_lower.gpu_space import AUTO
from compiler.graph_lower.lower import lower_group
from driver.tune.gpu_measure import _Candidate
from tests.gpu_marks import needs_opencl
from tests.models.oracle import assert_close, ort_run

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")


@pytest.fixture(scope="module")
def groups():
    """The digits CNN's fused groups: name -> (node, KernelDef)."""
    g, p = import_model(DIGITS)
    opt = optimize(g, p)
    return {n.attr("name"): (n, lower_group(n, "k", declare_target(), None))
            for n in opt.graph.nodes() if n.op is Op.FUSED}


def source(kdef, config, printer=opencl.OpenCLPrinter):
    stages, _ = gpu_stages(kdef, "k", config)
    return c_source.print_module(printer, [st.func for st in stages])[0]


def test_default_point_prints_the_untuned_kernels(groups):
    sizes = []
    for node, kdef in groups.values():
        space = gpu_space(kdef)
        sizes.append(space.size)
        assert source(kdef, space.default) == source(kdef, None)
    assert max(sizes) > 100        # the conv groups have real choices


def test_spaces_offer_the_knobs_their_stages_use(groups):
    conv = gpu_space(groups["fused_conv2d_add_relu_reshape"][1])
    names = [k.name for k in conv.knobs]
    assert names == ["threads", "tile", "split_k", "ptile", "vector", "unroll", "shared"]
    assert [k.default for k in conv.knobs] == [AUTO, AUTO, AUTO, AUTO, 1, "tile", 0]
    # 16 output channels per packed block: every power of two up to 16 per thread
    assert conv.knobs[1].candidates == (AUTO, 1, 2, 4, 8, 16)
    dense = gpu_space(groups["fused_dense_add"][1])
    assert "tile" not in [k.name for k in dense.knobs]        # no packed-conv stage there
    with pytest.raises(ValueError, match="knob 'vector' must be one of"):
        conv.point(vector=3)


# one non-default value per knob, on the second conv (split-K applies there), with the
# other knobs it needs to matter: ptile tiles the split-K partials, unroll=none the tile loops,
# shared stages the conv's inputs (without split-K: else it would stage the partial sums)
KNOB_VALUES = [("threads", 128, {}), ("tile", 4, {}), ("split_k", 2, {}), ("ptile", 2, {"split_k": 4}),
               ("vector", 2, {}), ("unroll", "reduce", {}), ("unroll", "none", {"tile": 4}),
               ("shared", 4, {"split_k": 1}), ("shared", 4, {"split_k": 1, "tile": 4})]


@needs_opencl
@pytest.mark.parametrize("knob,value,extra", KNOB_VALUES, ids=[f"{k}={v}" for k, v, _ in KNOB_VALUES])
def test_each_knob_changes_the_source_and_keeps_the_values(groups, knob, value, extra):
    node, kdef = groups["fused_conv2d_add_relu_reshape"]
    space = gpu_space(kdef)
    cfg = space.point(**{knob: value}, **extra)
    assert source(kdef, cfg) != source(kdef, space.point(**extra))
    if knob == "shared":     # both inputs staged in __local arrays, with barriers around
        code = source(kdef, cfg)
        assert code.count("__local float") == 2 and "barrier(CLK_LOCAL_MEM_FENCE)" in code
    payload = {"node": node, "target": "opencl"}
    ref, cand = _Candidate(payload, None), _Candidate(payload, cfg)
    ref.run()
    cand.run()
    want = ref.output()
    assert np.abs(want).max() > 0
    np.testing.assert_allclose(cand.output(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@needs_opencl
def test_a_tuned_model_matches_onnxruntime(tmp_path):
    """A log putting every group at a non-default point: the kernels change, the model's
    output stays within 1e-4 of onnxruntime's."""
    from compiler.autotune.gpu_task import gpu_target_record, gpu_workload_key
    g, p = import_model(DIGITS)
    opt = optimize(g, p)
    target = gpu_target_record("opencl")
    lines = []
    for n in opt.graph.nodes():
        if n.op is Op.FUSED:
            space = gpu_space(lower_group(n, "k", declare_target(), None))
            vals = {k.name: k.candidates[-1] if k.name != "threads" else 128 for k in space.knobs}
            lines.append(json.dumps({"version": 1, "key": gpu_workload_key(n), "target": target,
                                     "config": vals, "costs": [1e-6], "error": None,
                                     "timestamp": 0.0}))
    log = tmp_path / "gpu.jsonl"
    log.write_text("\n".join(lines) + "\n")
    plain = build_model(DIGITS, target="opencl")
    tuned = build_model(DIGITS, target="opencl", tuning_log=str(log))
    assert tuned.stats["tuning"]["covered"] == tuned.stats["tuning"]["workloads"] >= 3
    assert tuned.files["kernels.cl"] != plain.files["kernels.cl"]
    from driver.runtime import load_module
    x = np.random.default_rng(0).standard_normal((1, 1, 8, 8)).astype("float32")
    assert_close(load_module(tuned)(x)[0], ort_run(onnx.load(DIGITS), {"image": x})[0], rel=1e-4,
                 what="digits logits, tuned kernels")


@pytest.mark.skipif(not cuda.nvcc_path(), reason="no nvcc on PATH (CUDA toolkit)")
def test_cuda_source_at_a_non_default_point_compiles_with_nvcc(groups):
    _, kdef = groups["fused_conv2d_add_relu_reshape"]
    space = gpu_space(kdef)
    cfg = space.point(threads=128, tile=4, split_k=2, ptile=2, vector=2, unroll="reduce")
    code = source(kdef, cfg, cuda.CUDAPrinter)
    assert "__launch_bounds__" in code
    assert cuda.compile_source(code, "tuned", "sm_90", "cubin", compiler="nvcc")[:4] == b"\x7fELF"
    cfg = space.point(threads=64, tile=2, split_k=1, shared=4)
    code = source(kdef, cfg, cuda.CUDAPrinter)
    assert "__shared__" in code and "__syncthreads()" in code
    cubin = cuda.compile_source(code, "tuned", "sm_90", "cubin", compiler="nvcc")
    assert cubin[:4] == b"\x7fELF"
