"""DLPack across driver.runtime: inputs shared from torch/numpy without a copy when dtype,
shape, contiguity and alignment allow (copied otherwise), outputs taken by torch.from_dlpack /
np.from_dlpack without a copy (valid until the next run), and a view alive at interpreter
exit does not crash it.

The module: y = relu(x @ W^T + b), x float32[4, 16], built from a torch Linear.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from compiler import build_model
from driver.runtime import Array, RuntimeModuleError, load_module

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


@pytest.fixture(scope="module")
def built():
    net = Net().eval()
    return net, build_model(net, example_inputs=(torch.randn(4, 16),))


@pytest.fixture
def m(built):
    return load_module(built[1])


def _expect(net, x):
    with torch.no_grad():
        return net(torch.as_tensor(x)).numpy()


def test_torch_input_is_shared_not_copied(built, m):
    net = built[0]
    x = torch.randn(4, 16)
    assert m.set_input("x", x) is True
    assert m.get_input("x", copy=False).data_ptr == x.data_ptr()
    m.run()
    np.testing.assert_allclose(m.get_output(0), _expect(net, x), rtol=1e-5, atol=1e-6)
    x.mul_(-1)    # the kernels read the caller's memory: the next run sees the change
    m.run()
    np.testing.assert_allclose(m.get_output(0), _expect(net, x), rtol=1e-5, atol=1e-6)


def test_numpy_input_is_shared(m):
    x = np.random.default_rng(0).standard_normal((4, 16), dtype=np.float32)
    buf = np.empty(4 * 16 + 16, np.float32)
    off = (-buf.ctypes.data % 64) // 4
    x_aligned = buf[off:off + 64].reshape(4, 16)
    x_aligned[...] = x
    assert m.set_input(0, x_aligned) is True
    assert m.get_input(0, copy=False).data_ptr == x_aligned.ctypes.data


@pytest.mark.parametrize("make", [
    lambda: torch.randn(16, 4).t(),                          # not contiguous
    lambda: torch.randn(4, 16, dtype=torch.float64),         # another dtype: converted
    lambda: torch.randn(4 * 16 + 1)[1:].view(4, 16),         # 4 bytes off the 64-byte boundary
    lambda: np.random.default_rng(1).standard_normal((4, 16)).tolist(),   # no buffer at all
], ids=["strided", "float64", "misaligned", "list"])
def test_inputs_that_cannot_be_shared_are_copied(built, m, make):
    x = make()
    assert m.set_input("x", x) is False
    assert m.get_input("x", copy=False).data_ptr % 64 == 0
    m.run()
    np.testing.assert_allclose(m.get_output(0), _expect(built[0], np.asarray(x, np.float32)),
                               rtol=1e-5, atol=1e-5)


def test_a_copy_after_a_shared_input_goes_back_to_the_modules_buffer(m):
    x = torch.randn(4, 16)
    own = m.get_input(0, copy=False).data_ptr
    assert m.set_input(0, x) and m.get_input(0, copy=False).data_ptr == x.data_ptr()
    assert not m.set_input(0, x.double())
    assert m.get_input(0, copy=False).data_ptr == own


def test_output_view_is_taken_without_a_copy_and_aliases_the_next_run(built, m):
    net = built[0]
    x1, x2 = torch.randn(4, 16), torch.randn(4, 16)
    m.set_input(0, x1)
    m.run()
    view = m.get_output(0, copy=False)
    assert isinstance(view, Array) and view.__dlpack_device__() == (1, 0)
    t = torch.from_dlpack(view)
    a = np.from_dlpack(view)
    assert t.data_ptr() == view.data_ptr == a.ctypes.data
    owned = view.copy()
    np.testing.assert_allclose(t.numpy(), _expect(net, x1), rtol=1e-5, atol=1e-6)
    m.set_input(0, x2)
    m.run()            # documented: the view shows the new run; the copy keeps the old result
    np.testing.assert_allclose(t.numpy(), _expect(net, x2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(owned, _expect(net, x1), rtol=1e-5, atol=1e-6)
    assert np.asarray(view).ctypes.data == view.data_ptr


def test_refused_exports_are_one_line_errors(m):
    with pytest.raises(RuntimeModuleError, match=r"^input 'x': the value refuses DLPack export "
                       r".*tensor\.detach\(\)"):
        m.set_input("x", torch.randn(4, 16, requires_grad=True))
    with pytest.raises(RuntimeModuleError, match=r"input 'x' has shape \[2, 16\], the module was "
                       r"compiled for \[4, 16\]"):
        m.set_input("x", torch.randn(2, 16))


def test_a_view_alive_at_interpreter_exit_does_not_crash(tmp_path, built):
    """The capsule's deleter must outlive the interpreter's teardown (numpy's C deleter)."""
    built[1].save(tmp_path / "lin.vtamod")
    script = (
        "import torch, numpy as np\n"
        "from driver.runtime import load_module\n"
        f"m = load_module({str(tmp_path / 'lin.vtamod')!r})\n"
        "x = torch.randn(4, 16)\n"
        "m.set_input(0, x); m.run()\n"
        "t = torch.from_dlpack(m.get_output(0, copy=False))\n"
        "a = np.from_dlpack(m.get_output(0, copy=False))\n"
        "keep = [t, a, m.get_output(0, copy=False).__dlpack__()]\n"
        "del m\n"
        "print('ok', bool((t.numpy() == a).all()))\n")
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok True"
