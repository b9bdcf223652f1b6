"""The GPU probes and the CUDA-graph fallback say why they give up, and let bugs through."""
from __future__ import annotations

import logging
import sys

import pytest

from compiler.codegen.gpu import cuda, opencl


def test_no_cuda_bindings_means_no_gpu_and_says_why(monkeypatch, caplog):
    def no_bindings():
        raise ImportError("No module named 'cuda'")
    monkeypatch.setattr(cuda, "_driver", no_bindings)
    with caplog.at_level(logging.DEBUG, logger="compiler.codegen.gpu.cuda"):
        assert cuda.gpu_available() is False
    assert "no GPU: cuda-bindings does not import (No module named 'cuda')" in caplog.text


def test_a_bug_in_the_cuda_probe_is_not_read_as_no_gpu(monkeypatch):
    def buggy():
        raise TypeError("a bug")
    monkeypatch.setattr(cuda, "_driver", buggy)
    with pytest.raises(TypeError, match="a bug"):
        cuda.gpu_available()


def test_a_bug_in_the_opencl_probe_is_not_read_as_no_opencl(monkeypatch):
    cl = pytest.importorskip("pyopencl")
    def buggy():
        raise TypeError("a bug")
    monkeypatch.setattr(cl, "get_platforms", buggy)
    with pytest.raises(TypeError, match="a bug"):
        opencl.available()


class _FakeDriver:
    """Enough of ``cuda.bindings.driver`` for ``_Cuda._capture`` on a driver without graphs."""
    class CUstreamCaptureMode:
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 0

    def cuStreamBeginCapture(self, stream, mode):
        return (801,)       # CUDA_ERROR_NOT_SUPPORTED

    def cuGetErrorString(self, err):
        return (0, b"operation not supported")


def test_a_failed_cuda_graph_capture_falls_back_with_a_warning(caplog):
    from driver.gpu_runtime import _Cuda
    m = _Cuda.__new__(_Cuda)            # no device here: only the capture path
    m.drv, m.stream, m.launches = _FakeDriver(), 0, [None] * 3
    with caplog.at_level(logging.WARNING, logger="driver.gpu_runtime"):
        assert m._capture() is None
    assert ("CUDA graph capture failed (cuStreamBeginCapture failed: 801 (operation not "
            "supported)); launching the 3 kernels one by one instead") in caplog.text


def test_the_cpu_probe_works_without_a_stderr(monkeypatch):
    from compiler.codegen.llvm.target import _cpu_known
    monkeypatch.setattr(sys, "stderr", None)
    assert _cpu_known.__wrapped__("x86_64-unknown-linux-gnu", "no-such-cpu") is False
