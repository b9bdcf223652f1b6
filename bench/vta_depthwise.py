"""Would depthwise convolutions gain from the accelerator? The GEMM-core bound on the cycle model.

A depthwise 3x3 conv over C channels on the GEMM core is, per block of BLOCK channels, a
BLOCK -> BLOCK conv whose weight block is diagonal (1/BLOCK of each GEMM's MACs used): its
cycles are C/BLOCK times those of the ordinary conv ``conv2d_program((1, BLOCK, H, W),
(BLOCK, BLOCK, 3, 3))``, which this script compiles and times on the cycle model (timing
only). The ALU mapping is slower still: per tap and 16-lane vector a MUL (6 cycles,
``timing.ALU_MUL_CYCLES_PER_UOP``) and an ADD, on int32 inputs loaded into ACC at 4x the
bytes. For MobileNet-v2's depthwise layers it prints the accelerator's cycles, its time at
``--clock-mhz`` and its effective int8 throughput (GMAC/s) next to the CPU's: each layer's
int8 MACs over ``--cpu-gmacs`` (a stated host: one core's int8 depthwise, a few GMAC/s).
Last line: one JSON object.

Usage: ``python bench/vta_depthwise.py [--clock-mhz 50] [--cpu-gmacs 4]``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.topi.vta import conv2d_program  # noqa: E402
from compiler.topi.vta.environment import Env  # noqa: E402
from sim import cycle  # noqa: E402
from vta_hw.config import load_config  # noqa: E402

#: MobileNet-v2's depthwise 3x3 layers at 224x224: (channels, input size, stride)
LAYERS = ((32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (384, 14, 1),
          (576, 14, 1), (576, 14, 2), (960, 7, 1))


def gemm_core_cycles(cfg, c: int, size: int, stride: int) -> int:
    """Cycle-model cycles of depthwise (c, size, stride) mapped on the GEMM core (docstring)."""
    block = Env(cfg).BLOCK_IN
    k = conv2d_program(cfg, (1, block, size, size), (block, block, 3, 3), stride, 1, shift=6,
                       relu=True)
    return -(-c // block) * cycle.run(k.program, values=False).cycles


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=None)
    ap.add_argument("--clock-mhz", type=float, default=50.0)
    ap.add_argument("--cpu-gmacs", type=float, default=4.0,
                    help="stated host's int8 depthwise throughput, 1e9 MACs/s")
    a = ap.parse_args(argv)
    cfg = load_config(a.config)
    rows, tot_vta, tot_cpu = [], 0.0, 0.0
    for c, size, stride in LAYERS:
        out = (size - 1) // stride + 1
        macs = c * out * out * 9
        cyc = gemm_core_cycles(cfg, c, size, stride)
        vta_s, cpu_s = cyc / (a.clock_mhz * 1e6), macs / (a.cpu_gmacs * 1e9)
        tot_vta, tot_cpu = tot_vta + vta_s, tot_cpu + cpu_s
        rows.append({"channels": c, "size": size, "stride": stride, "macs": macs, "cycles": cyc,
                     "vta_us": round(vta_s * 1e6, 1), "cpu_us": round(cpu_s * 1e6, 1),
                     "vta_gmacs": round(macs / vta_s / 1e9, 3)})
        print(f"dw {c:4d} x {size:3d}^2 s{stride}: {cyc:9d} cycles = {vta_s * 1e6:8.1f} us at "
              f"{a.clock_mhz:g} MHz ({macs / vta_s / 1e9:.3f} GMAC/s); CPU at {a.cpu_gmacs:g} "
              f"GMAC/s {cpu_s * 1e6:8.1f} us")
    out = {"bench": "vta_depthwise", "config": cfg.name, "clock_MHz": a.clock_mhz,
           "cpu_GMACs_stated": a.cpu_gmacs, "vta_total_us": round(tot_vta * 1e6, 1),
           "cpu_total_us": round(tot_cpu * 1e6, 1),
           "vta_over_cpu_time_ratio": round(tot_vta / tot_cpu, 2), "layers": rows}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
