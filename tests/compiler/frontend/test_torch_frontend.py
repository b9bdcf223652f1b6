"""The PyTorch frontend (compiler/frontend/torch_export.py): ATen converters against torch eager,
unsupported ops listed at once with source lines, dynamic shapes, .pt2 files, the frontend
registry and the one-line errors for bad input."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from compiler import build_model
from compiler.build_model import import_model
from compiler.frontend import FrontendError
from compiler.frontend.errors import UnsupportedAtenError
from compiler.frontend.registry import find
from compiler.graph import Graph
from compiler.graph.ops import Op
from driver.runtime import load_module


def _check(model, *inputs, rtol=1e-4, atol=1e-5):
    """Compile ``model`` through torch.export for the host CPU; compare with eager."""
    model.eval()
    m = load_module(build_model(model, example_inputs=inputs))
    outs = m(*[x.numpy() for x in inputs])
    with torch.no_grad():
        ref = model(*inputs)
    ref = ref if isinstance(ref, tuple) else (ref,)
    assert len(outs) == len(ref)
    for y, r in zip(outs, ref):
        np.testing.assert_allclose(y, r.numpy(), rtol=rtol, atol=atol)


class ConvOps(nn.Module):
    """Convolutions (plain, depthwise, transposed), batch norm, activations, pooling (max, avg,
    adaptive), nearest/bilinear interpolation, cat/split/slice/pad."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False)
        self.up = nn.ConvTranspose2d(8, 6, 2, stride=2)
        self.dil = nn.Conv2d(6, 6, 3, padding=2, dilation=2)
        self.bn.running_mean.uniform_(-0.2, 0.2)
        self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.relu6(self.bn(self.conv(x)))
        y = F.hardswish(self.dw(y))
        y = F.gelu(self.up(y))
        y = F.leaky_relu(self.dil(y), 0.1) + torch.tanh(y) * torch.sigmoid(y)
        a, b = torch.split(y, [2, 4], dim=1)
        y = torch.cat([b, F.gelu(a, approximate="tanh")], 1)[:, :, 2:, ::2]
        p = F.max_pool2d(F.pad(y, (1, 1, 0, 0)), 2, ceil_mode=True)
        q = F.avg_pool2d(y, 3, stride=1, padding=1, count_include_pad=False)
        r = F.adaptive_avg_pool2d(q, (5, 3))
        n = F.interpolate(r, scale_factor=2, mode="nearest")
        s = F.interpolate(r, size=(5, 7), mode="bilinear", align_corners=False)
        t = F.interpolate(r, size=(4, 4), mode="bilinear", align_corners=True)
        return p, n, s.clamp(-1, 1), t, F.adaptive_avg_pool2d(y, 1).flatten(1)


class SeqOps(nn.Module):
    """Linear on 3-D inputs, layer norm, matmul/bmm, softmax, scaled dot-product attention
    (plain, causal, masked), index_select/select/embedding, view/permute/transpose/(un)squeeze,
    mean/sum, elementwise arithmetic with broadcasting and scalars."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin, self.ln = nn.Linear(16, 24), nn.LayerNorm(24)
        self.emb = nn.Embedding(10, 8)
        self.register_buffer("mask", torch.rand(6, 6) > 0.3)
        self.mask[:, 0] = True

    def forward(self, x):
        h = self.ln(self.lin(x))                                  # [2, 6, 24]
        q, k, v = h.view(2, 6, 3, 8).permute(2, 0, 1, 3)          # [2, 6, 8] each
        a = F.scaled_dot_product_attention(q, k, v)
        c = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        m = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
        s = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 3.0, -1) @ v
        idx = torch.tensor([3, 0, 5])
        g = torch.index_select(h, 1, idx).unsqueeze(0).squeeze(0) + self.emb(idx)[None, :, :1]
        e = (x.pow(2).sum(-1, keepdim=True) + 1).sqrt() - torch.rsqrt(x * x + 1) / 2
        return a + c - m * 0.5, s, g, e.mean(1), h.select(1, 2) * (1 - torch.erf(h[:, 0]))


def test_conv_ops_match_torch():
    _check(ConvOps(), torch.randn(1, 3, 12, 12))


def test_sequence_ops_match_torch():
    _check(SeqOps(), torch.randn(2, 6, 16))


def test_parameters_become_named_constants_and_inputs_keep_forward_names():
    graph, params = import_model(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()),
                                 example_inputs=(torch.randn(1, 3, 8, 8),))
    assert [i.name for i in graph.inputs] == ["input"] and graph.output_names == ("output",)
    assert "0.weight" in params       # state-dict keys (the bias folds into its reshape)
    assert [n.op for n in graph.nodes() if n.op is Op.CONV2D]


class Unsupported(nn.Module):
    def forward(self, x):
        y = torch.exp(x)                      # no converter
        return torch.cumsum(y, 1) + torch.relu(x)   # no converter either


def test_unsupported_ops_are_listed_at_once_with_source_lines():
    with pytest.raises(UnsupportedAtenError) as e:
        import_model(Unsupported(), example_inputs=(torch.randn(2, 3),))
    msg = str(e.value)
    assert msg.startswith("2 node(s) use ATen ops the PyTorch frontend does not support "
                          "(aten.cumsum.default, aten.exp.default):")
    lines = Unsupported.forward.__code__.co_firstlineno
    assert f"aten.exp.default (node 'exp', test_torch_frontend.py:{lines + 1})" in msg
    assert f"test_torch_frontend.py:{lines + 2})" in msg
    assert "torch.compile(model, backend='vta')" in msg
    assert [op for op, _, _ in e.value.unsupported] == ["aten.exp.default", "aten.cumsum.default"]


def _dynamic_program():
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    return model, torch.export.export(model, (torch.randn(3, 8),),
                                      dynamic_shapes={"input": {0: batch}})


def test_dynamic_dimension_is_an_error_naming_it_unless_input_shapes_fix_it():
    model, ep = _dynamic_program()
    with pytest.raises(FrontendError, match=r"^the program has dynamic shapes: input 'input' "
                       r"dimension 0 \(\w+\); give static shapes with input_shapes=\{'input': "
                       r"\(1, \.\.\.\)\} \(CLI: --input-shape input:1x8\)"):
        import_model(ep)
    graph, _ = import_model(ep, input_shapes={"input": (5, 8)})
    assert graph.inputs[0].shape == (5, 8)
    x = torch.randn(5, 8)
    y, = load_module(build_model(ep, input_shapes={"input": (5, 8)}))(x.numpy())
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_pt2_file_builds_and_bad_files_say_what_to_do(tmp_path):
    model, ep = _dynamic_program()
    static = torch.export.export(model, (torch.randn(2, 8),))
    torch.export.save(static, tmp_path / "m.pt2")
    x = torch.randn(2, 8)
    y, = load_module(build_model(str(tmp_path / "m.pt2")))(x.numpy())
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    (tmp_path / "bad.pt2").write_bytes(b"not a zip")
    with pytest.raises(FrontendError, match=r"bad\.pt2' is not a torch\.export program .*; save "
                       r"one with torch\.export\.save"):
        import_model(str(tmp_path / "bad.pt2"))
    with pytest.raises(FrontendError, match=r"cannot read PyTorch program '.*none\.pt2': no such file"):
        import_model(str(tmp_path / "none.pt2"))


def test_bad_arguments_are_one_line_errors():
    lin = nn.Linear(4, 2)
    with pytest.raises(FrontendError, match=r"^Linear: give example_inputs=\(tensor, \.\.\.\)"):
        import_model(lin)
    with pytest.raises(FrontendError, match=r"input_shapes names \['y'\] are not inputs of the "
                       r"program; its inputs are \['input'\]"):
        import_model(lin, example_inputs=(torch.randn(1, 4),), input_shapes={"y": (1, 4)})
    with pytest.raises(FrontendError, match=r"example_inputs applies to PyTorch nn.Modules, not "
                       r"to ONNX models; give input_shapes instead"):
        import_model("examples/digits/digits_cnn.onnx", example_inputs=(torch.randn(1, 4),))
    with pytest.raises(FrontendError, match=r"^no frontend takes a dict; give an ONNX model"):
        import_model({"not": "a model"})


def test_registry_picks_the_frontend_by_model_kind():
    g, _ = import_model(nn.ReLU(), example_inputs=(torch.randn(2, 2),))
    assert find(g).name == "graph"
    assert find(nn.ReLU()).name == "torch" and find("m.pt2").name == "torch"
    assert find("m.onnx").name == "onnx" and find(b"bytes").name == "onnx"
    assert isinstance(g, Graph)


def test_onnx_models_and_the_runtime_never_import_torch():
    """torch is an optional extra: nothing but PyTorch models needs it."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from compiler import build_model\n"
            "from driver.runtime import load_module\n"
            "load_module(build_model('examples/digits/digits_cnn.onnx'))\n"
            "print('torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "False"


def test_import_prints_no_torch_deprecation_warning():
    """torch 2.13's run_decompositions warns about its own LeafSpec use (torch_export.decompose
    silences exactly that); a user's import shows no FutureWarning or DeprecationWarning."""
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        graph, _ = import_model(net, example_inputs=(torch.randn(1, 1, 8, 8),))
    assert graph.outputs[0].shape == (1, 4, 6, 6)
