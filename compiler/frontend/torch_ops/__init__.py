"""ATen op converters: `CONVERTERS["aten.<op>.<overload>"](ctx, fx_node) -> value`.

A value is a graph `Node`, a tuple of them (ops with several outputs, read by
`operator.getitem`), or a plain Python value. One module per family; each
exports a `CONVERTERS` dict merged here. The ops are those of the core ATen
opset that `torch.export`'s decompositions leave (`compiler.frontend.torch_export.KEEP`
lists the few composite ops kept whole: hardswish, scaled dot-product attention).
"""

from . import elementwise, nn, tensor

CONVERTERS = {**elementwise.CONVERTERS, **nn.CONVERTERS, **tensor.CONVERTERS}
