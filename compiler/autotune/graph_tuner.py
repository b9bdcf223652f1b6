"""The graph tuner: one layout per node over the whole graph, by dynamic programming.

The problem (AutoTVM's graph tuner, ``python/tvm/autotvm/graph_tuner``, in our shape):
nodes ``0..n-1`` in topological order, each with candidate costs ``node_costs[v][c]``
(seconds; ``inf`` where a candidate was not measured or failed), and pairwise edges
``(u, v, M)`` with ``u < v`` and ``M[cu][cv]`` the cost of what joins them (the layout
transform from ``u`` 's output layout to the layout ``v`` wants; 0 where they agree).
Minimise the sum of the chosen candidates' costs and the edges' costs.

Method: a dynamic program over the topological order whose state is the choice of every
*live* node (one with an edge to a node not yet decided). On a chain one node is live and
this is the classic Viterbi recurrence; on a ResNet's residual blocks two or three are
(the block input waits for the add), so the state count stays a few hundred and the
result is exact. AutoTVM's own DPTuner is exact on chains only and falls back to PBQP on
branching graphs; the live-set state makes branches exact too, at a cost exponential in
the number of live nodes only, which is small for CNNs. Should a graph keep more than
``max_states`` states alive (wide multi-branch blocks), the cheapest ``max_states`` are
kept, a beam search, and :attr:`Solution.exact` says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from vta_hw.errors import ArgumentError


@dataclass(frozen=True)
class Solution:
    """The choice (a candidate index per node), its total cost, and whether it is proven
    minimal (False where the state set was cut to ``max_states``)."""

    choice: tuple
    cost: float
    exact: bool


def total_cost(node_costs, edges, choice) -> float:
    """The objective of ``choice`` (a candidate index per node)."""
    return (sum(node_costs[v][c] for v, c in enumerate(choice))
            + sum(m[choice[u]][choice[v]] for u, v, m in edges))


def solve(node_costs, edges, max_states: int = 100_000) -> Solution:
    """The choice of least total cost (module docstring).

    Args:
        node_costs: per node, the cost of each candidate (a sequence of floats).
        edges: ``(u, v, M)`` with ``0 <= u < v < n`` and ``M[cu][cv]`` a cost.
        max_states: states kept per step before the beam cut.

    Raises:
        ArgumentError: an edge that is not ``u < v`` within the nodes, a matrix of the
            wrong shape, or no finite choice (every combination costs ``inf``).
    """
    n = len(node_costs)
    incoming: list = [[] for _ in range(n)]
    last_use = list(range(n))
    for u, v, m in edges:
        if not 0 <= u < v < n:
            raise ArgumentError(f"edge ({u}, {v}) must join nodes u < v below {n}")
        if len(m) != len(node_costs[u]) or any(len(r) != len(node_costs[v]) for r in m):
            raise ArgumentError(f"edge ({u}, {v}): cost matrix must be {len(node_costs[u])} x "
                                f"{len(node_costs[v])}")
        incoming[v].append((u, m))
        last_use[u] = max(last_use[u], v)
    live: list = []
    states = {(): (0.0, ())}               # live nodes' choices -> (cost, full choice)
    exact = True
    for v in range(n):
        after = [u for u in live + [v] if last_use[u] > v]
        nxt: dict = {}
        for cost, choice in states.values():
            for c, own in enumerate(node_costs[v]):
                total = cost + own + sum(m[choice[u]][c] for u, m in incoming[v])
                if not math.isfinite(total):
                    continue
                full = choice + (c,)
                key = tuple(full[u] for u in after)
                if key not in nxt or total < nxt[key][0]:
                    nxt[key] = (total, full)
        if not nxt:
            raise ArgumentError(f"no finite layout choice reaches node {v}: every candidate "
                                "or transform before it was unmeasured or failed")
        if len(nxt) > max_states:
            exact = False
            nxt = dict(sorted(nxt.items(), key=lambda kv: kv[1][0])[:max_states])
        states, live = nxt, after
    cost, choice = min(states.values())
    return Solution(choice, cost, exact)
