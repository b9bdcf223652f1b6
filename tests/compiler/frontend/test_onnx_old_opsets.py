"""Models stored at opsets below 11 (the ONNX Model Zoo's classic CNNs are at 7 to 9): converted on
load with onnx.version_converter, one logged line saying so, and compared with onnxruntime."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend.errors import FrontendError, UnsupportedOperatorError
from compiler.frontend.onnx import UPGRADE_OPSET, from_onnx
from compiler.graph import run
from tests.models.oracle import assert_close, ort_run

R = np.random.default_rng(7)


def _f32(*shape):
    return R.uniform(-1, 1, shape).astype(np.float32)


def _model(nodes, inits, opset, x_shape=(1, 3, 8, 8)):
    """At IR version 3 (opset 7), as the Model Zoo stores them, initializers are graph inputs too."""
    ir_version = 3 if opset < 8 else 4
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    if ir_version == 3:
        inputs += [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
                   for k, v in inits.items()]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "old", inputs, [y], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m


def _cnn(opset):
    """Conv, BatchNormalization, Relu, MaxPool, Dropout, Flatten, Gemm, Softmax: a classic CNN's ops."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Dropout", ["p"], ["d"], ratio=0.3),
        helper.make_node("Flatten", ["d"], ["f"]),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["z"], transB=1),
        helper.make_node("Softmax", ["z"], ["y"]),
    ]
    inits = dict(w=_f32(4, 3, 3, 3), b=_f32(4), g=_f32(4), be=_f32(4), m=_f32(4),
                 v=R.uniform(0.5, 1.5, 4).astype(np.float32), fw=_f32(5, 64), fb=_f32(5))
    return _model(nodes, inits, opset)


def _upsample(opset):
    """Upsample (removed at opset 10; the converter turns it into Resize) then a Reshape."""
    up = (helper.make_node("Upsample", ["x"], ["u"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]) if opset == 7
          else helper.make_node("Upsample", ["x", "s"], ["u"], mode="nearest"))
    inits = {} if opset == 7 else {"s": np.array([1, 1, 2, 2], np.float32)}
    nodes = [up, helper.make_node("Reshape", ["u", "shape"], ["y"])]
    return _model(nodes, {**inits, "shape": np.array([1, -1], np.int64)}, opset, (1, 2, 3, 3))


@pytest.mark.parametrize("build,opset", [(_cnn, 7), (_cnn, 8), (_cnn, 9), (_upsample, 7), (_upsample, 9)])
def test_old_opset_is_converted_and_matches_onnxruntime(build, opset, caplog):
    model = build(opset)
    x = _f32(*[d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])
    with caplog.at_level(logging.WARNING, logger="compiler.frontend.onnx"):
        graph, params = from_onnx(model)
    lines = [r.getMessage() for r in caplog.records if r.name == "compiler.frontend.onnx"]
    assert lines == [f"ONNX model at opset {opset} converted to opset {UPGRADE_OPSET} with onnx.version_converter"]
    (expected,) = ort_run(model, {"x": x})
    (got,) = run(graph, params, {"x": x})
    assert_close(got, expected, rel=1e-5, what=f"{build.__name__} at opset {opset}")


def test_supported_opset_is_not_converted(caplog):
    model = _cnn(9)
    model.opset_import[0].version = 13  # every op above reads the same at 13
    with caplog.at_level(logging.WARNING, logger="compiler.frontend.onnx"):
        from_onnx(model)
    assert not [r for r in caplog.records if r.name == "compiler.frontend.onnx"]


def test_operator_without_schema_is_listed_not_converted():
    model = _model([helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")], {}, 9)
    with pytest.raises(UnsupportedOperatorError, match=r"NoSuchOp \(node 'mystery'\)"):
        from_onnx(model)


def test_converter_failure_is_a_frontend_error():
    """At IR version 3 an initializer must also be a graph input; the converter refuses a model
    where it is not. The error names both opsets, the converter's reason and what to do."""
    model = _model([helper.make_node("Add", ["x", "b"], ["y"])], {"b": _f32(8)}, 7)
    del model.graph.input[1:]
    with pytest.raises(FrontendError, match=r"opset 7 is below 11 and onnx.version_converter cannot convert "
                                            r"the model to opset 13: Input b is undefined!\. Re-export the "
                                            r"model at opset 11 to 21"):
        from_onnx(model)
