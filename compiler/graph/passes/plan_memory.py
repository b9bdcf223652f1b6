"""Static memory planning: assign every intermediate activation a storage slot, reusing slots.

Execution order is the graph's topological order. Each compute node's output
(a FUSED kernel's result after `fuse_ops`, or each op before it) needs a
buffer from its execution until its last reader ran. Greedy best-fit, after
TVM's GraphPlanMemory: a new buffer takes the smallest free slot that is
large enough, else grows the largest free slot, else opens a new slot; a
buffer's slot is freed after its last reader ran (never shared between an
op's input and output). Graph outputs are never freed; INPUTs and PARAMs are
not planned (the caller owns them).

Figures (bytes): `unplanned_bytes` = one buffer per activation, summed;
`planned_bytes` = sum of slot sizes (the arena the runtime allocates);
`peak_live_bytes` = the largest total of simultaneously live activations
(a lower bound for any plan in this order).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node
from ..ops import LEAVES


@dataclass(frozen=True)
class MemoryPlan:
    storage: dict[Node, int]      # node -> slot id
    slot_bytes: tuple[int, ...]   # size of each slot
    unplanned_bytes: int
    peak_live_bytes: int

    @property
    def planned_bytes(self) -> int:
        return sum(self.slot_bytes)

    def summary(self) -> str:
        mb = 1 << 20
        return (f"{len(self.storage)} activations in {len(self.slot_bytes)} slots: planned "
                f"{self.planned_bytes / mb:.2f} MiB, peak live {self.peak_live_bytes / mb:.2f} MiB, "
                f"unplanned {self.unplanned_bytes / mb:.2f} MiB "
                f"({self.unplanned_bytes / max(self.planned_bytes, 1):.1f}x)")


def best_fit(order, keep=()) -> tuple[dict, list[int], int]:
    """Greedy best-fit slots (module docstring) for values written in execution order.

    Args:
        order: ``(value, nbytes, reads)`` per step, in execution order: the value it
            writes (None: nothing to plan), its size in bytes, the values it reads.
        keep: values never freed (graph outputs).

    Returns:
        (value -> slot index, bytes of each slot, peak bytes of live values).
    """
    steps = list(order)
    last_use = {}
    for i, (_, _, reads) in enumerate(steps):
        for s in reads:
            last_use[s] = i
    keep = set(keep)
    slots: list[int] = []
    free: list[int] = []
    storage, size = {}, {}
    live = peak = 0
    for i, (value, need, reads) in enumerate(steps):
        if value is not None:
            fits = [s for s in free if slots[s] >= need]
            if fits:
                slot = min(fits, key=lambda s: slots[s])
            elif free:
                slot = max(free, key=lambda s: slots[s])
                slots[slot] = need
            else:
                slot = len(slots)
                slots.append(need)
            if slot in free:
                free.remove(slot)
            storage[value], size[value] = slot, need
            live += need
            peak = max(peak, live)
        for s in dict.fromkeys(reads):          # once each, in read order: a set's order
                                                # varies with the hash seed, and with it the plan
            if s in storage and last_use.get(s) == i and s not in keep:
                free.append(storage[s])
                live -= size[s]
    return storage, slots, peak


def plan_memory(graph: Graph) -> MemoryPlan:
    order = [n for n in graph.nodes() if n.op not in LEAVES]
    storage, slots, peak = best_fit(((n, n.nbytes, n.src) for n in order), graph.outputs)
    return MemoryPlan(storage, tuple(slots), sum(n.nbytes for n in order), peak)
