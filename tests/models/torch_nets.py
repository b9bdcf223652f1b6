"""Seeded PyTorch models defined in code (no downloads; torchvision does not import beside
torch 2.13): ResNet-18, MobileNetV2, a small transformer encoder and the digits CNN of ``examples/digits/``.

Each ``make_*`` returns a module in eval mode with weights from ``torch.manual_seed(seed)``
and random batch-norm statistics (so batch-norm folding is exercised), and
``example_input(name, size)`` its float32 input: ``[1, 3, size, size]`` for the CNNs,
``[1, seq, dim]`` for the encoder, ``[batch, 1, 8, 8]`` (pixel / 16) for the digits CNN.
"""

from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F


def _randomize_bn(model: nn.Module, seed: int) -> nn.Module:
    g = torch.Generator().manual_seed(seed + 1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return model.eval()


def _conv_bn(cin, cout, k, stride=1, groups=1):
    return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convs with an identity or 1x1/stride-2 shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(cin, cout, 3, stride), nn.ReLU(), *_conv_bn(cout, cout, 3))
        self.short = (nn.Sequential(*_conv_bn(cin, cout, 1, stride)) if stride != 1 or cin != cout
                      else nn.Identity())

    def forward(self, x):
        return F.relu(self.body(x) + self.short(x))


class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2015, torchvision layout): conv7x7/2-BN-ReLU-maxpool, 4 stages of
    2 BasicBlocks, adaptive average pool, linear."""

    def __init__(self, classes=1000):
        super().__init__()
        layers = [*_conv_bn(3, 64, 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for stage, cout in enumerate((64, 128, 256, 512)):
            for b in range(2):
                layers.append(BasicBlock(cin, cout, 2 if stage and not b else 1))
                cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class InvertedResidual(nn.Module):
    """MobileNetV2's expand 1x1 -> depthwise 3x3 -> project 1x1, ReLU6, residual when shapes match."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        layers = [*_conv_bn(cin, mid, 1), nn.ReLU6()] if expand != 1 else []
        layers += [*_conv_bn(mid, mid, 3, stride, groups=mid), nn.ReLU6(), *_conv_bn(mid, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018), width 1.0."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [*_conv_bn(3, 32, 3, 2), nn.ReLU6()], 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [*_conv_bn(cin, 1280, 1), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class EncoderLayer(nn.Module):
    """Post-LayerNorm transformer encoder layer: multi-head self-attention
    (``F.scaled_dot_product_attention``) and a GELU feed-forward."""

    def __init__(self, dim, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ff1, self.ff2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = self.norm1(x + self.proj(a))
        return self.norm2(x + self.ff2(F.gelu(self.ff1(x))))


class Encoder(nn.Module):
    """``layers`` encoder layers over ``[batch, seq, dim]`` inputs."""

    def __init__(self, dim=64, heads=4, ffn=128, layers=2):
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer(dim, heads, ffn) for _ in range(layers)])

    def forward(self, x):
        return self.layers(x)


class DigitsCNN(nn.Module):
    """The digits CNN of ``examples/digits/`` (8x8 grey images, 10 classes): conv 1->8 3x3,
    ReLU, conv 8->16 3x3 stride 2, ReLU, flatten, linear 256->10. ``load_digits_weights``
    copies the trained weights of ``digits_cnn.onnx`` into it."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 8, 3, padding=1), nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc(F.relu(self.c2(F.relu(self.c1(x)))).flatten(1))


def load_digits_weights(model: DigitsCNN, onnx_path: str) -> DigitsCNN:
    """The trained weights of ``examples/digits/digits_cnn.onnx`` (initializers c1_w, c1_b,
    c2_w, c2_b, fc_w, fc_b; Gemm's fc_w is [10, 256] as Linear's) copied into ``model``."""
    import onnx
    from onnx import numpy_helper
    arrays = {t.name: numpy_helper.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
    with torch.no_grad():
        for layer in ("c1", "c2", "fc"):
            getattr(model, layer).weight.copy_(torch.from_numpy(arrays[f"{layer}_w"].copy()))
            getattr(model, layer).bias.copy_(torch.from_numpy(arrays[f"{layer}_b"].copy()))
    return model.eval()


MODELS = {"resnet18": ResNet18, "mobilenet_v2": MobileNetV2, "encoder": Encoder, "digits": DigitsCNN}


def make(name: str, seed: int = 0, **kwargs) -> nn.Module:
    """A seeded model of ``MODELS`` in eval mode (KeyError names the choices)."""
    if name not in MODELS:
        raise KeyError(f"model must be one of {', '.join(MODELS)}, not {name!r}")
    torch.manual_seed(seed)
    return _randomize_bn(MODELS[name](**kwargs), seed)


def example_input(name: str, size: int = 32, seed: int = 0, batch: int = 1) -> torch.Tensor:
    """A seeded input: images ``[batch, 3, size, size]``, ``[batch, size, 64]`` for the encoder
    (``size`` = sequence length), ``[batch, 1, 8, 8]`` for digits."""
    g = torch.Generator().manual_seed(seed)
    if name == "encoder":
        return torch.randn(batch, size, 64, generator=g)
    if name == "digits":
        return torch.rand(batch, 1, 8, 8, generator=g)
    return torch.randn(batch, 3, size, size, generator=g)
