"""Helpers for the graph_lower tests: fuse a small graph, lower one group, run it against numpy."""
from __future__ import annotations

import numpy as np

import compiler.build
from compiler.graph import Graph, Op, input_node, optimize, param_node, run
from compiler.graph_lower.lower import lower_group
from compiler.graph_lower.packing import pack_param


class Model:
    """A small graph under construction: inputs, seeded random constants."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.inputs, self.params = [], {}

    def input(self, name, shape):
        node = input_node(name, shape, "float32")
        self.inputs.append(node)
        return node

    def param(self, name, shape, scale=0.5):
        value = (self.rng.standard_normal(shape) * scale).astype("float32")
        self.params[name] = value
        return param_node(name, value)

    def groups(self, out, layout_block=None) -> tuple[list, dict]:
        """The FUSED nodes of the optimized graph computing ``out``, and its params."""
        opt = optimize(Graph(tuple(self.inputs), (out,), ("y",)), self.params,
                       layout_block=layout_block)
        return [n for n in opt.graph.nodes() if n.op is Op.FUSED], opt.params

    def group(self, out, layout_block=None):
        """The one FUSED node computing ``out`` (asserts there is one), and the params."""
        groups, params = self.groups(out, layout_block)
        assert len(groups) == 1, [g.attr("name") for g in groups]
        return groups[0], params


def run_group(node, params, target=None, config=None, seed=1):
    """Lower FUSED ``node``, build and run its kernel on random inputs (the graph's constants
    where constants feed it) and check it against the numpy reference of its body.

    Returns the KernelDef."""
    rng = np.random.default_rng(seed)
    kdef = lower_group(node, "k", target, config)
    body = node.attr("body")
    vals = [np.asarray(params[s.name]) if s.op is Op.PARAM
            else rng.standard_normal(s.shape).astype(s.dtype) for s in node.src]
    expected = run(body, {}, {inp.name: v for inp, v in zip(body.inputs, vals)})[0]
    out = kdef.args[-1]
    args = ([pack_param(v, tag) if tag else v for v, tag in zip(vals, kdef.packs)] + kdef.constants
            + [np.zeros(t.shape, t.dtype) for t in kdef.workspace] + [np.empty(out.shape, out.dtype)])
    compiler.build(kdef.schedule, kdef.args, name="k", fp_contract=True)(*args)
    got = args[-1].reshape(expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(expected).max()))
    return kdef
