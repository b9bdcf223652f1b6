"""from_onnx beyond single ops: errors, input shape overrides, constant subgraph folding, opsets."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import FrontendError, UnsupportedOperatorError
from compiler.frontend.onnx import from_onnx
from compiler.graph import Op, run
from tests.models.oracle import assert_close, ort_run


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _relu_model(shape=(1, 3, 4, 4), opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y], opset=opset)


def test_unsupported_operators_reported_all_at_once():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Det", ["a"], ["b"], name="det1"),
             helper.make_node("NonZero", ["b"], ["c"], name="nz"),
             helper.make_node("Custom", ["c"], ["y"], name="mine", domain="com.example")]
    m = _model(nodes, [x], [y])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(m)
    assert info.value.unsupported == [("Det", "det1", ""), ("NonZero", "nz", ""),
                                      ("Custom", "mine", "com.example")]
    msg = str(info.value)
    assert "3 node(s)" in msg and "'det1'" in msg and "'nz'" in msg and "com.example" in msg


def test_truncated_file_fails_clearly(tmp_path):
    from tests.models.builders import build_bert_layer
    data = build_bert_layer(seq=4, hidden=16, heads=2, ffn=32).SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match="not a valid ONNX model|not an ONNX model"):
        from_onnx(path)


def test_non_onnx_file_fails_clearly(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("hello, this is not a model\n")
    with pytest.raises(FrontendError, match="ONNX"):
        from_onnx(str(path))


def test_missing_file_fails_clearly(tmp_path):
    with pytest.raises(FrontendError, match="cannot read ONNX model"):
        from_onnx(tmp_path / "absent.onnx")


def test_dynamic_dimension_needs_override():
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    m = _model([helper.make_node("Relu", ["images"], ["y"])], [x], [y])
    with pytest.raises(FrontendError, match=r"input 'images' has dynamic shape batchx3x4x4.*input_shapes="
                                            r".*--input-shape images:"):
        from_onnx(m)
    graph, _ = from_onnx(m, input_shapes={"images": (2, 3, 4, 4)})
    assert graph.inputs[0].shape == (2, 3, 4, 4)


def test_bad_overrides_name_the_problem():
    m = _relu_model()
    with pytest.raises(FrontendError, match=r"\['nope'\] are not graph inputs.*\['x'\]"):
        from_onnx(m, input_shapes={"nope": (1,)})
    with pytest.raises(FrontendError, match="has rank 2, but the model declares rank 4"):
        from_onnx(m, input_shapes={"x": (1, 3)})


def test_opset_above_range_is_refused():
    with pytest.raises(FrontendError, match="opset 22 is not supported.*11 to 21"):
        from_onnx(_relu_model(opset=22))


def test_shape_subgraph_is_folded():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (as torch exports flatten) and ConstantOfShape fold away."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0")]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["newshape"], axis=0),
        helper.make_node("Reshape", ["x", "newshape"], ["flat"]),
        helper.make_node("Shape", ["flat"], ["fs"]),
        helper.make_node("ConstantOfShape", ["fs"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Constant", [], ["k"], value_float=2.0),
        helper.make_node("Mul", ["ones", "k"], ["three"]),
        helper.make_node("Dropout", ["flat"], ["d"]),
        helper.make_node("Add", ["d", "three"], ["y"]),
    ]
    m = _model(nodes, [x], [y], inits, opset=13)
    graph, params = from_onnx(m)
    ops = [n.op for n in graph.nodes()]
    assert ops == [Op.INPUT, Op.RESHAPE, Op.PARAM, Op.ADD]
    assert list(params) == [n.name for n in graph.nodes() if n.op is Op.PARAM]
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)}
    assert_close(run(graph, params, feeds)[0], ort_run(m, feeds)[0])


def test_non_constant_shape_input_is_rejected():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    m = _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="dyn_reshape")], [x, s], [y])
    with pytest.raises(FrontendError, match=r"Reshape node 'dyn_reshape': input 1 \(shape\) must be a constant"):
        from_onnx(m)


def test_bad_attribute_names_node():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.zeros((2, 3, 3, 3), np.float32), "w")
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_bad")], [x], [y], [w])
    with pytest.raises(FrontendError, match=r"Conv node 'conv_bad'.*channels 4 != weight in-channels 3"):
        from_onnx(m)


def test_model_proto_bytes_and_path_agree(tmp_path):
    m = _relu_model()
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    graphs = [from_onnx(src)[0] for src in (m, m.SerializeToString(), path, str(path))]
    assert all(g == graphs[0] for g in graphs)


def test_initializer_listed_as_input_is_a_param():
    """Older exporters list initializers among graph inputs; they stay constants."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    m = _model([helper.make_node("Add", ["x", "b"], ["y"])], [x, b], [y],
               [numpy_helper.from_array(np.ones(3, np.float32), "b")])
    graph, params = from_onnx(m)
    assert [n.name for n in graph.inputs] == ["x"] and list(params) == ["b"]


def test_parse_input_shape_cli_form():
    from compiler.frontend import parse_input_shape, parse_input_shapes
    assert parse_input_shape("images:1x3x224x224") == ("images", (1, 3, 224, 224))
    assert parse_input_shape("ns:x:2X4") == ("ns:x", (2, 4))
    assert parse_input_shapes(["a:1", "b:2x3"]) == {"a": (1,), "b": (2, 3)}
    for bad in ("1x3x224x224", "x:", "x:1x0", "x:1xa"):
        with pytest.raises(FrontendError, match=f"input shape must look like name:1x3x224x224.*not {bad!r}"):
            parse_input_shape(bad)
    with pytest.raises(FrontendError, match="given twice"):
        parse_input_shapes(["a:1", "a:2"])


def test_qdq_model_folds_weight_dequantization():
    """QDQ (QuantizeLinear -> DequantizeLinear around a conv with int8 weights), as quantization tools emit."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(rng.integers(-127, 127, (4, 3, 3, 3)).astype(np.int8), "wq"),
             numpy_helper.from_array(np.full(4, 0.01, np.float32), "ws"),
             numpy_helper.from_array(np.zeros(4, np.int8), "wz"),
             numpy_helper.from_array(np.float32(0.05), "xs"), numpy_helper.from_array(np.uint8(128), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    m = _model(nodes, [x], [y], inits, opset=13)
    graph, params = from_onnx(m)
    assert [n.op for n in graph.nodes() if n.op is not Op.PARAM] == [Op.INPUT, Op.QUANTIZE, Op.DEQUANTIZE,
                                                                      Op.CONV2D, Op.RELU]
    feeds = {"x": rng.uniform(-3, 3, (1, 3, 6, 6)).astype(np.float32)}
    assert_close(run(graph, params, feeds)[0], ort_run(m, feeds)[0], rel=1e-5)


@pytest.mark.parametrize("shape,wshape", [((1, 2, 8), (3, 2, 3)), ((1, 2, 4, 4, 4), (3, 2, 1, 1, 1))])
def test_non_2d_conv_is_rejected(shape, wshape):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.zeros(wshape, np.float32), "w")
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c")], [x], [y], [w])
    with pytest.raises(FrontendError, match=r"Conv node 'c': only 2-D \(NCHW\) inputs are supported"):
        from_onnx(m)


def test_legacy_attribute_forms_are_accepted():
    """Clip min/max, Pad pads/value and Slice starts/ends/axes as attributes (their pre-opset-11 forms,
    still found in version-converted models) convert like the input forms."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.25),
             helper.make_node("Pad", ["c"], ["p"], pads=[0, 1, 1, 0], value=9.0),
             helper.make_node("Slice", ["p"], ["y"], starts=[1, -4], ends=[3, 100], axes=[0, 1])]
    m = onnx.helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 11)])
    graph, params = from_onnx(m)
    v = np.random.default_rng(1).uniform(-1, 1, (2, 5)).astype(np.float32)
    expected = np.pad(np.clip(v, -0.5, 0.25), ((0, 1), (1, 0)), constant_values=9.0)[1:3, -4:]
    np.testing.assert_array_equal(run(graph, params, {"x": v})[0], expected)
