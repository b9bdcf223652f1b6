"""The graph tuner's dynamic program against brute force on synthetic costs (a chain, a
residual block, a two-branch block), the beam cut, bad input; the graph_layout record."""
from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pytest

from compiler.autotune.graph_tuner import solve, total_cost
from compiler.autotune.record import LayoutRecord, TuningLog, TuningLogWarning, read_log
from vta_hw.errors import ArgumentError


def brute_force(node_costs, edges):
    return min(total_cost(node_costs, edges, c)
               for c in itertools.product(*(range(len(k)) for k in node_costs)))


def problem(rng, sizes, links):
    """Random node costs (some inf) and transform-like edge costs (0 on the diagonal)."""
    costs = [list(rng.uniform(1, 10, k)) for k in sizes]
    costs[1][0] = math.inf
    edges = []
    for u, v in links:
        m = rng.uniform(0, 6, (sizes[u], sizes[v]))
        for i in range(min(sizes[u], sizes[v])):
            m[i, i] = 0.0
        edges.append((u, v, m.tolist()))
    return costs, edges


# chain; ResNet basic block with a projection (0 -> 1 -> 3 and 0 -> 2, the add of 2's
# output owned by 3, then 4); two residual blocks in a row; a fan-out of three
GRAPHS = {
    "chain": ([3, 4, 2, 4, 3], [(0, 1), (1, 2), (2, 3), (3, 4)]),
    "residual": ([3, 4, 3, 4, 4], [(0, 1), (1, 3), (0, 2), (2, 3), (3, 4)]),
    "two_blocks": ([3, 3, 3, 3, 3, 3], [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (2, 4), (4, 5)]),
    "fan_out": ([3, 3, 3, 3, 3], [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)]),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("seed", range(5))
def test_the_dp_finds_the_brute_force_minimum(name, seed):
    costs, edges = problem(np.random.default_rng(seed), *GRAPHS[name])
    sol = solve(costs, edges)
    assert sol.exact
    assert sol.cost == pytest.approx(brute_force(costs, edges))
    assert total_cost(costs, edges, sol.choice) == pytest.approx(sol.cost)


def test_the_dp_pays_a_transform_when_it_saves_more_than_it_costs():
    # nodes 0 and 2 prefer layout 0, node 1 layout 1: cheap moves (1) are paid, 1 + 1 + 1
    # + 2 moves = 5 against 7 all in layout 1; dear moves (9) are not: 3 + 1 + 3 = 7
    costs = [[1.0, 3.0], [9.0, 1.0], [1.0, 3.0]]
    move = [[0.0, 1.0], [1.0, 0.0]]
    sol = solve(costs, [(0, 1, move), (1, 2, move)])
    assert (sol.choice, sol.cost) == ((0, 1, 0), 5.0)
    dear = [[0.0, 9.0], [9.0, 0.0]]
    sol = solve(costs, [(0, 1, dear), (1, 2, dear)])
    assert (sol.choice, sol.cost) == ((1, 1, 1), 7.0)


def test_a_beam_cut_is_reported_and_stays_a_valid_choice():
    costs, edges = problem(np.random.default_rng(0), *GRAPHS["fan_out"])
    sol = solve(costs, edges, max_states=2)
    assert not sol.exact
    assert sol.cost == pytest.approx(total_cost(costs, edges, sol.choice))
    assert sol.cost >= brute_force(costs, edges) - 1e-9


def test_bad_problems_are_named():
    with pytest.raises(ArgumentError, match=r"edge \(1, 0\) must join nodes u < v below 2"):
        solve([[1.0], [1.0]], [(1, 0, [[0.0]])])
    with pytest.raises(ArgumentError, match="cost matrix must be 1 x 2"):
        solve([[1.0], [1.0, 2.0]], [(0, 1, [[0.0]])])
    with pytest.raises(ArgumentError, match="no finite layout choice reaches node 1"):
        solve([[1.0], [math.inf]], [])


def test_the_layout_record_round_trips_and_other_kinds_warn(tmp_path):
    log = TuningLog(tmp_path / "t.jsonl")
    rec = LayoutRecord("ab12", {"target": "llvm"}, [(0, 0), (16, 8)], {"dp_s": 1e-3})
    log.append(rec)
    with open(log.path, "a") as f:
        f.write(json.dumps({"kind": "graph_fusion", "version": 1}) + "\n")
        f.write(json.dumps({"kind": "graph_layout", "version": 2, "graph": "x"}) + "\n")
    with pytest.warns(TuningLogWarning) as caught:
        got = read_log(log.path)
    assert got["trial"] == [] and got["graph_layout"] == [rec]
    msgs = [str(w.message) for w in caught]
    assert "line 2" in msgs[0] and "record kind 'graph_fusion' is unknown" in msgs[0]
    assert "line 3" in msgs[1] and "graph_layout format version 2, this reader takes 1" in msgs[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_log(tmp_path / "none.jsonl") == {"trial": [], "graph_layout": []}
