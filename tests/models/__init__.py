"""Shared ONNX model builders and the onnxruntime oracle for tests (import as `models.*`)."""
