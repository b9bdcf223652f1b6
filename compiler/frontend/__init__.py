"""Model importers. `compiler.frontend.onnx.from_onnx` turns an ONNX model into a graph IR `Graph` + params."""

from .errors import FrontendError, UnsupportedOperatorError
from .shapes import parse_input_shape, parse_input_shapes

__all__ = ["FrontendError", "UnsupportedOperatorError", "parse_input_shape", "parse_input_shapes"]
