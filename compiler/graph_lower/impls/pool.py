"""Max and average pooling (NCHW; ONNX padding, dilation and count_include_pad rules).

One implementation: parallel over (n, c, row), the window reduction innermost
(``topi.pooling``). Knob ``par_depth``: 3 (default) fuses (n, c, row) into the
parallel loop, 2 only (n, c).
"""
from __future__ import annotations

from compiler.graph import Op
from compiler.topi import pooling as tpool

from ..builder import view
from ..master import MasterKind
from ..space import ConfigSpace, Knob
from ..strategy import register


def _pool2d(b, n, a, cfg):
    x = b.tensor_of(a[0], "pool_in")
    acc = tpool.pool2d(x, "max" if n.op is Op.MAX_POOL else "avg", n.attr("kernel"),
                       n.attr("strides", (1, 1)), n.attr("pads", (0, 0, 0, 0)),
                       n.attr("dilations", (1, 1)), n.attr("count_include_pad", 0), n.shape[2:],
                       name=b.fresh("pool"))
    return view(acc), acc


for _op in (Op.MAX_POOL, Op.AVG_POOL):
    register(_op, "pool2d_nchw", kind=MasterKind.POOL,
             space=lambda w: ConfigSpace((Knob("par_depth", (3, 2), 3),)),
             schedule=lambda s, acc, out, cfg: tpool.schedule_pool2d(s, acc, out,
                                                                     cfg["par_depth"]))(_pool2d)
