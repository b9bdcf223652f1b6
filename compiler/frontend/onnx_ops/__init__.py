"""ONNX op converters: `CONVERTERS[op_type](ctx, node, attrs) -> Node | tuple[Node, ...]`.

One module per family; each exports a `CONVERTERS` dict merged here.
"""

from . import einsum, elementwise, nn, qlinear, quant, reduce, resize, tensor

CONVERTERS = {**elementwise.CONVERTERS, **nn.CONVERTERS, **tensor.CONVERTERS, **reduce.CONVERTERS,
              **einsum.CONVERTERS, **quant.CONVERTERS, **qlinear.CONVERTERS, **resize.CONVERTERS}
