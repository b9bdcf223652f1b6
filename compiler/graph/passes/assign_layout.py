"""Per-conv data layouts: where layout choices meet (:func:`layout_sites`) and the pass that
applies one choice (:func:`assign_layout`).

A *site* is a CONV2D (groups 1 or depthwise, NCHW, constant weights) whose layout is a
choice: ``(in block, out block)``, block 0 meaning plain NCHW (today's ``conv2d_nchw`` with
packed weights, or ``depthwise_conv2d_nchw``) and ``b > 0`` meaning ``NCHW{b}c``. The plain
choice is ``(0, 0)``; blocked choices read ``NCHW{ib}c`` data and an ``OIHW{ib}i{ob}o``
kernel and write ``NCHW{ob}c`` (``(0, ob)``: NCHW data, an ``OIHW{ob}o`` kernel); a depthwise conv's blocked choices are ``(b, b)`` with an
``OIHW{b}o`` kernel (:func:`kernel_layout`), so a chain of blocked 1x1 and depthwise convs
(MobileNetV2's) needs no transforms between them.

Every 4-D activation belongs to the *region* of one site (the conv that computed it, with
the unary and per-channel elementwise ops after it) or to the NCHW world (region -1: graph
inputs and the outputs of every other op). A binary elementwise op of two activations
(a residual add) takes the layout of the operand whose region is the later site (the conv
it fuses into); the other operand moves to it. An :class:`Edge` is one such move: tensor
``tensor`` of region ``src`` must take site ``dst`` 's ``"in"`` or ``"out"`` layout (dst
-1: NCHW, for any other op and for graph outputs). Where the layouts differ, the pass
inserts one LAYOUT_TRANSFORM per (tensor, layout). Sites are numbered in topological
order and every edge runs from a lower region to a higher site, which is what the graph
tuner's dynamic program (``compiler.autotune.graph_tuner``) relies on.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ..errors import GraphError
from ..ir import Graph, Node, make
from ..ops import BINARY, UNARY, Op

NCHW = "NCHW"
#: the blocks offered: 16 = one AVX-512 fp32 vector, 8 = one AVX2 vector (the channel
#: blocks ``conv2d_nchwc`` vectorises over)
BLOCKS = (16, 8)


def layout_of(block: int) -> str:
    """``"NCHW"`` for block 0, else ``"NCHW{block}c"``."""
    return NCHW if block == 0 else f"NCHW{block}c"


def describe_layouts(layouts) -> str:
    """A per-conv choice ``[(in block, out block)]`` as reports print it, e.g. ``"2 of 2 convs
    blocked (NCHW->NCHW8c, NCHW8c->NCHW16c)"``; a run of equal choices reads ``"... x3"``.
    A conv is blocked when it reads or writes ``NCHW{b}c``: a ``(0, b)`` conv takes NCHW
    data and writes blocked output, which is transformed back wherever NCHW is needed."""
    choices = [tuple(c) for c in layouts]
    blocked = sum(1 for ib, ob in choices if ib or ob)
    runs = []                                   # [choice, count] per run of equal choices
    for c in choices:
        if runs and runs[-1][0] == c:
            runs[-1][1] += 1
        else:
            runs.append([c, 1])
    each = ", ".join(f"{layout_of(ib)}->{layout_of(ob)}" + (f" x{n}" if n > 1 else "")
                     for (ib, ob), n in runs)
    return f"{blocked} of {len(choices)} conv{'' if len(choices) == 1 else 's'} blocked ({each})"


@dataclass(frozen=True)
class Site:
    """One conv whose layout is chosen: its node and its ``(in block, out block)`` candidates
    (the first is ``(0, 0)``, plain NCHW)."""

    node: Node
    candidates: tuple


@dataclass(frozen=True)
class Edge:
    """``tensor`` (NCHW shape), in the out layout of site ``src`` (-1: NCHW), must take site
    ``dst`` 's ``port`` layout (``"in"`` or ``"out"``; dst -1: NCHW)."""

    tensor: Node
    src: int
    dst: int
    port: str


@dataclass(frozen=True)
class LayoutSites:
    """The sites and edges of a graph (module docstring); ``plan`` maps each classified
    node to its role, which :func:`assign_layout` follows."""

    sites: tuple
    edges: tuple
    plan: dict

    @property
    def key(self) -> str:
        """A fingerprint of the sites' workloads and edges: a layout decision applies to a
        graph with the same key only."""
        desc = [[list(s.node.src[0].shape), list(s.node.src[1].shape),
                 [[k, repr(v)] for k, v in s.node.attrs]] for s in self.sites]
        desc.append([[list(e.tensor.shape), e.src, e.dst, e.port] for e in self.edges])
        return hashlib.sha256(json.dumps(desc).encode()).hexdigest()[:16]

    def required(self, edge: Edge, choice) -> str:
        """The layout ``edge`` 's tensor must take under ``choice`` (one pair per site)."""
        if edge.dst < 0:
            return NCHW
        ib, ob = choice[edge.dst]
        return layout_of(ib if edge.port == "in" else ob)

    def transforms(self, choice) -> set:
        """The (tensor, from layout, to layout) moves ``choice`` implies: one per tensor and
        target layout, as :func:`assign_layout` inserts them."""
        out = set()
        for e in self.edges:
            have = NCHW if e.src < 0 else layout_of(choice[e.src][1])
            want = self.required(e, choice)
            if have != want:
                out.add((e.tensor, have, want))
        return out


def _per_channel(c: Node, channels: int) -> bool:
    return c.op is Op.PARAM and (int(np.prod(c.shape)) == 1 and len(c.shape) <= 4
                                 or c.shape in ((channels, 1, 1), (1, channels, 1, 1)))


def _is_depthwise(n: Node) -> bool:
    """groups == channels, one input channel per group (channel multiplier 1)."""
    return n.attr("groups", 1) == n.src[0].shape[1] == n.shape[1] and n.src[1].shape[1] == 1


def _is_site(n: Node) -> bool:
    return (n.op is Op.CONV2D and (n.attr("groups", 1) == 1 or _is_depthwise(n))
            and n.attr("data_layout", NCHW) == NCHW and n.src[1].op is Op.PARAM
            and len(n.shape) == 4)


def _candidates(n: Node, blocks: tuple) -> tuple:
    """A site's ``(in block, out block)`` choices: plain first; a depthwise conv keeps its
    block (in == out), others take any pair of blocks dividing their channel counts, or
    NCHW in and a block out (a stem over 3 channels)."""
    C, O = n.src[0].shape[1], n.shape[1]
    if n.attr("groups", 1) > 1:
        return ((0, 0),) + tuple((b, b) for b in blocks if C % b == 0)
    return ((0, 0),) + tuple((i, o) for i in (0,) + tuple(b for b in blocks if C % b == 0)
                             for o in blocks if O % o == 0)


def kernel_layout(conv: Node, ib: int, ob: int) -> str:
    """The blocked kernel layout of site ``conv`` laid out as ``(ib, ob)``: ``OIHW{ib}i{ob}o``
    (``conv2d_nchwc``), or ``OIHW{ob}o`` for a depthwise conv (``[C/b, 1, KH, KW, b]``,
    ``depthwise_conv2d_nchwc``) and for NCHW data (``ib`` 0: ``[O/b, C, KH, KW, b]``,
    ``conv2d_nchw_to_nchwc``)."""
    return f"OIHW{ob}o" if conv.attr("groups", 1) > 1 or not ib else f"OIHW{ib}i{ob}o"


def layout_sites(graph: Graph, blocks: tuple = BLOCKS) -> LayoutSites:
    """The layout sites of an un-fused NCHW graph (after constant and batch-norm folding),
    their candidates over ``blocks`` (each dividing the conv's channels) and the edges."""
    region: dict = {}            # 4-D activation -> site index or -1
    sites, edges, plan = [], [], {}

    def edge(t, dst, port):
        src = region.get(t, -1)
        if src == dst and (src < 0 or port == "out"):
            return                        # always the same layout
        e = Edge(t, src, dst, port)
        if e not in edges:
            edges.append(e)

    for n in graph.nodes():
        if n.op in (Op.INPUT, Op.PARAM):
            if n.op is Op.INPUT and len(n.shape) == 4:
                region[n] = -1
            continue
        if _is_site(n):
            cands = _candidates(n, blocks)
            edge(n.src[0], len(sites), "in")
            region[n] = len(sites)
            plan[n] = ("site", len(sites))
            sites.append(Site(n, cands))
            continue
        acts = [i for i, s in enumerate(n.src) if s in region and s.shape == n.shape]
        if n.op in UNARY and acts == [0]:
            region[n] = region[n.src[0]]
            plan[n] = ("follow", 0)
            continue
        if n.op in BINARY and acts and len(n.shape) == 4:
            others = [i for i in range(2) if i not in acts]
            if all(_per_channel(n.src[i], n.shape[1]) for i in others):
                owner = max(acts, key=lambda i: region[n.src[i]])
                for i in acts:
                    if i != owner:
                        edge(n.src[i], region[n.src[owner]], "out")
                region[n] = region[n.src[owner]]
                plan[n] = ("follow", owner)
                continue
        for s in n.src:                   # any other op reads NCHW
            if s in region:
                edge(s, -1, "in")
        if len(n.shape) == 4:
            region[n] = -1
    for o in graph.outputs:
        if o in region:
            edge(o, -1, "in")
    return LayoutSites(tuple(sites), tuple(edges), plan)


def assign_layout(graph: Graph, params: dict,
                  choose: "Callable[[LayoutSites], Mapping | None]") -> tuple[Graph, dict]:
    """Lay the convs out as ``choose(layout_sites(graph))`` says: a sequence of one
    ``(in block, out block)`` per site, or None to leave the graph as it is. Inserts the
    transforms the choice implies (``LayoutSites.transforms``); weight transforms are
    constant (run ``fold_constants`` after this pass).

    Raises:
        GraphError: a choice of the wrong length or one outside a site's candidates.
    """
    ls = layout_sites(graph)
    choice = choose(ls)
    if choice is None:
        return graph, dict(params)
    choice = [tuple(c) for c in choice]
    if len(choice) != len(ls.sites):
        raise GraphError(f"layout choice has {len(choice)} entries, the graph has "
                         f"{len(ls.sites)} conv sites; tune this model again")
    for i, (c, s) in enumerate(zip(choice, ls.sites)):
        if c not in s.candidates:
            raise GraphError(f"layout choice {c} of conv site {i} ({s.node.label or 'unnamed'}) "
                             f"is not one of its candidates {s.candidates}")
    new: dict = {}
    lay: dict = {}
    moved: dict = {}

    def to(t: Node, want: str) -> Node:
        have = lay.get(t, NCHW)
        if have == want:
            return new[t]
        if (t, want) not in moved:
            moved[t, want] = make(Op.LAYOUT_TRANSFORM, new[t], src_layout=have, dst_layout=want)
        return moved[t, want]

    for n in graph.nodes():
        role = ls.plan.get(n)
        if n.op in (Op.INPUT, Op.PARAM):
            new[n] = n
        elif role is None:
            new[n] = n.with_src(*(to(s, NCHW) if s in lay else new[s] for s in n.src))
        elif role[0] == "site":
            ib, ob = choice[role[1]]
            if (ib, ob) == (0, 0):
                new[n] = n.with_src(to(n.src[0], NCHW), new[n.src[1]])
            else:
                klayout = kernel_layout(n, ib, ob)
                w = make(Op.LAYOUT_TRANSFORM, new[n.src[1]], src_layout="OIHW", dst_layout=klayout)
                attrs = dict(n.attr_dict, data_layout=layout_of(ib), kernel_layout=klayout)
                new[n] = make(Op.CONV2D, to(n.src[0], layout_of(ib)), w, label=n.label, **attrs)
            lay[n] = layout_of(ob)
        else:
            owner = role[1]
            want = lay.get(n.src[owner], NCHW)
            src = [to(s, want) if s in lay else _relaid(new[s], want, n.shape[1])
                   for s in n.src]
            new[n] = make(n.op, *src, label=n.label, **n.attr_dict)
            lay[n] = want
        if len(n.shape) == 4 and n not in lay and n.op is not Op.PARAM:
            lay[n] = NCHW
    outs = tuple(to(o, NCHW) if o in lay else new[o] for o in graph.outputs)
    return Graph(graph.inputs, outs, graph.output_names), dict(params)


def _relaid(c: Node, layout: str, channels: int) -> Node:
    """A per-channel or scalar constant for a binary op in ``layout``."""
    if layout == NCHW or int(np.prod(c.shape)) == 1:
        return c
    return make(Op.LAYOUT_TRANSFORM, make(Op.RESHAPE, c, newshape=(1, channels, 1, 1)),
                src_layout=NCHW, dst_layout=layout)


def count_transforms(graph: Graph) -> int:
    """LAYOUT_TRANSFORM nodes of ``graph``, inside fused bodies too (after constant folding
    these are the activation moves: the weights' are folded into the parameters)."""
    total = 0
    for n in graph.nodes():
        if n.op is Op.LAYOUT_TRANSFORM:
            total += 1
        elif n.op is Op.FUSED:
            total += count_transforms(n.attr("body"))
    return total
