"""`vta compile --dtype bfloat16` names the layers its accuracy rule keeps fp32
(compiler.graph_lower.bf16_accuracy) and the cosine the module then reaches."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.codegen.llvm.target import host_target
from tests.cli_util import run_cli as run


def _deep_tanh(tmp_path):
    """x [1, 3, 4, 4] -> 12 x (Conv 1x1 16, gain 2.5 -> Tanh): deep and narrow enough that
    bf16 rounding in the first layers, amplified by the rest, misses the rule's target."""
    rng = np.random.default_rng(0)
    nodes, inits, t = [], [], "x"
    for i in range(12):
        cin = 16 if i else 3
        w = (rng.standard_normal((16, cin, 1, 1)) * 2.5 / np.sqrt(cin)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("Conv", [t, f"w{i}"], [f"c{i}"], name=f"conv{i}"),
                  helper.make_node("Tanh", [f"c{i}"], [f"t{i}"])]
        t = f"t{i}"
    g = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          [1, 3, 4, 4])],
                          [helper.make_tensor_value_info(t, TensorProto.FLOAT, [1, 16, 4, 4])],
                          inits)
    path = tmp_path / "deep.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.skipif("+avx512bf16" not in host_target().features.split(","),
                    reason="this CPU has no AVX512-BF16: the build would be fp32")
def test_compile_bfloat16_names_the_layers_kept_fp32(tmp_path):
    r = run("compile", _deep_tanh(tmp_path), "-o", tmp_path / "bf16.vtamod", "--dtype",
            "bfloat16", "--quiet")
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if "kept fp32" in ln)
    assert "bf16: the first 3 of 12 bf16-able layers kept fp32 (" in line
    assert float(line.split("emulated cosine ")[1].split(" >=")[0]) >= 0.9995
    assert "bf16: 9 of 12 convs built in bf16 (the others stay fp32: the accuracy rule's below" \
        in r.output
    cos = next(ln for ln in r.output.splitlines() if "bf16 vs fp32" in ln).split("cosine ")[1]
    assert float(cos.split(",")[0]) >= 0.999
