"""The master of a fused group: the one complex stage (conv, dense, pooling, reduction) that
the group's injective ops are fused around.

The implementation chosen for the master op (``compiler.graph_lower.strategy``)
declares its stages and records a :class:`Master`; ``schedule.schedule_group``
reads the kind to decide how the epilogue is attached and calls the recorded
schedule template.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import Callable

from compiler.graph import Node


class MasterKind(Enum):
    """What the master's accumulator looks like, hence how its group is scheduled."""

    # convolutions
    CONV2D = auto()            # NCHW data, packed weight; accumulator [N, O/ob, OH, OW, ob]
    CONV2D_NCHWC = auto()      # blocked NCHW{b}c data and output; accumulator = output
    DEPTHWISE_CONV2D = auto()  # groups == channels, one input channel per group; NCHW
    GROUP_CONV2D = auto()      # other groups > 1; NCHW
    CONV2D_TRANSPOSE = auto()  # NCHW, over a zero-inserted copy of the input
    # windows and products
    POOL = auto()              # max / average pooling, NCHW
    DENSE = auto()             # accumulator [M, N] over the flattened leading axes
    BATCH_MATMUL = auto()      # accumulator [B, M, N] over the flattened batch axes
    # reductions (global average pool, reduce-mean, softmax, layer norm): helper stages
    # run at the root as workspace
    REDUCTION = auto()


@dataclass(frozen=True)
class Master:
    """The master of one fused group.

    Attributes:
        kind: see :class:`MasterKind`.
        acc: the te tensor the master accumulates into.
        node: the master's node in the group's body.
        schedule: the implementation's schedule template at the chosen config point,
            called as ``schedule(s, acc, out)`` with ``out`` the stage that stores the
            result (``acc`` itself or the epilogue that reads it).
    """

    kind: MasterKind
    acc: object
    node: Node
    schedule: Callable
