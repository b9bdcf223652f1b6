"""Model importers. `compiler.frontend.onnx.from_onnx` turns an ONNX model into a graph IR `Graph` + params."""

from .errors import FrontendError, UnsupportedOperatorError

__all__ = ["FrontendError", "UnsupportedOperatorError"]
