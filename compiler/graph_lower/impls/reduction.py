"""Reductions: sum / prod / max / min / mean over axes, global average pool, softmax, layer norm.

Their helper stages (sums, maxima, statistics) run at the root as workspace;
the template schedules the reduction when it is the group's output (else the
group's output is an injective stage reading it). No knobs.
"""
from __future__ import annotations

from compiler.graph import Op
from compiler.topi import reduction as tred

from ..builder import view
from ..master import MasterKind
from ..strategy import register


def _reduction(op, name, declare):
    """Register ``declare(b, node, args) -> te tensor`` as the implementation of ``op``."""
    def compute(b, n, a, cfg):
        t = declare(b, n, a)
        return view(t), t
    register(op, name, kind=MasterKind.REDUCTION,
             schedule=lambda s, acc, out, cfg: tred.schedule_reduction(s, acc))(compute)


_reduction(Op.GLOBAL_AVG_POOL, "global_avg_pool",
           lambda b, n, a: tred.global_avg_pool(a[0], b.fresh("gap")))
_reduction(Op.REDUCE_MEAN, "reduce_mean",
           lambda b, n, a: tred.reduce_mean(a[0], n.attr("axes"), bool(n.attr("keepdims", 1)),
                                            b.fresh("mean")))
for _op, _combiner in ((Op.REDUCE_SUM, "sum"), (Op.REDUCE_PROD, "prod"), (Op.REDUCE_MAX, "max"),
                       (Op.REDUCE_MIN, "min")):
    _reduction(_op, _op.name.lower(),
               lambda b, n, a, c=_combiner: tred.reduce(a[0], n.attr("axes"), bool(n.attr("keepdims", 1)),
                                                        c, b.fresh(c)))
_reduction(Op.SOFTMAX, "softmax", lambda b, n, a: tred.softmax(a[0], n.attr("axis"), b.fresh("softmax")))
_reduction(Op.LAYER_NORM, "layer_norm",
           lambda b, n, a: tred.layer_norm(a[0], a[1], a[2] if len(a) > 2 else None, n.attr("axis"),
                                           n.attr("epsilon"), b.fresh("ln")))
