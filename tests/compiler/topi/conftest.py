"""Helpers for the operator tests: compile a small graph IR model and compare with the reference."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.build_model import build_model
from compiler.graph import Graph, input_node, param_node, run
from driver.runtime import load_module


class GraphCase:
    """Build a graph from inputs and params, compile it, run it, compare with ``compiler.graph.run``."""

    def __init__(self, tmp_path, seed=0):
        self.tmp = tmp_path
        self.rng = np.random.default_rng(seed)
        self.inputs, self.feeds, self.params = [], {}, {}

    def input(self, name, shape, dtype="float32"):
        node = input_node(name, shape, dtype)
        self.inputs.append(node)
        self.feeds[name] = self.rng.standard_normal(shape).astype(dtype)
        return node

    def param(self, name, value):
        value = np.asarray(value)
        self.params[name] = value
        return param_node(name, value)

    def rand_param(self, name, shape, scale=1.0):
        return self.param(name, (self.rng.standard_normal(shape) * scale).astype("float32"))

    def check(self, *outputs, rel=1e-5, layout_block=None):
        graph = Graph(tuple(self.inputs), tuple(outputs), tuple(f"out{i}" for i in range(len(outputs))))
        expected = run(graph, self.params, self.feeds)
        cm = build_model(graph, params=self.params, layout_block=layout_block)
        path = cm.save(str(self.tmp / "case.vtamod"))
        m = load_module(path)
        got = m(**self.feeds)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.dtype == e.dtype
            scale = max(float(np.abs(e).max()), 1e-6)
            err = float(np.abs(g.astype(np.float64) - e).max())
            assert err <= rel * scale, f"max abs error {err:.3g} > {rel} x {scale:.3g}"
        return cm, got


@pytest.fixture
def case(tmp_path):
    return GraphCase(tmp_path)
