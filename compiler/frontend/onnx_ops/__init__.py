"""ONNX op converters: `CONVERTERS[op_type](ctx, node, attrs) -> Node | tuple[Node, ...]`.

One module per family; each exports a `CONVERTERS` dict merged here.
"""

from . import elementwise, nn, quant, resize, tensor

CONVERTERS = {**elementwise.CONVERTERS, **nn.CONVERTERS, **tensor.CONVERTERS,
              **quant.CONVERTERS, **resize.CONVERTERS}
