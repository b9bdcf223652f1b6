"""Operator library: computes and their schedules per target (TVM's topi).

CPU (LLVM), one module per operator family:

- ``conv2d``: NCHW convolution with compile-time packed weights
  ``[O/ob, I, KH, KW, ob]`` and blocked NCHW{b}c convolution (register tile
  ``ow_tile x ob``, vectorised over output channels, parallel over rows);
  depthwise and grouped convolutions vectorised over columns.
- ``dense``: dense layers and GEMMs with packed weights ``[N/nb, K, nb]`` and
  batched matmul of activations, B packed in the kernel (``mr x nb`` register tiles,
  panel loop order); the graph's MatMul and Dense reach them through
  ``compiler.graph_lower.impls.dense``.
- ``pooling``: max / average pooling (ONNX padding and ceil-mode rules).
- ``reduction``: global average pool, reduce-mean, softmax, layer norm.
- ``injective``: elementwise, broadcast and data-movement ops as ``Lazy``
  index functions (inlined into a fused group's output stage) and the
  injective kernel schedule.
- ``nn_util``: spatial padding and window sizes.

``compiler.graph_lower`` composes these into one kernel per fused group.
"""
