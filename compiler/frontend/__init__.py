"""Model importers, each turning a model into a graph IR `Graph` + params: ONNX
(`onnx.from_onnx`), PyTorch (`torch_export.from_torch`: torch.export programs), picked
by model kind through `registry.find`; `import_model` (the front end of every
`build_model` route) calls it.
Importing this package imports neither onnx nor torch."""

from .errors import FrontendError, UnsupportedAtenError, UnsupportedOperatorError
from .registry import import_model
from .shapes import parse_input_shape, parse_input_shapes

__all__ = ["FrontendError", "UnsupportedAtenError", "UnsupportedOperatorError", "import_model",
           "parse_input_shape", "parse_input_shapes"]
