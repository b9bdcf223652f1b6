"""``vta fpga``: bitstreams for FPGA boards (``build``), the boards known (``list``) and
Xilinx resource estimates from Yosys without Vivado (``estimate``)."""
from __future__ import annotations

import json

import click

from driver.cli.options import check_config


@click.group()
def fpga() -> None:
    """Build the accelerator SoC for an FPGA board (open flow: Yosys + nextpnr from YoWASP).

    \b
      vta fpga list                              boards and the presets that fit them
      vta fpga build --board ulx3s-85f           bitstream + report.json
      vta fpga build --board icebreaker --config 1x1_i8w8a32_10_9_9_11_bus8_cq0
      vta fpga build --board ulx3s-85f --seeds 4 four placements, keep the fastest
      vta fpga estimate --part xc7z020 --config 1x8_i8w8a32_11_12_13_14
                                                 Xilinx resources from Yosys (no Vivado)
    """


@fpga.command("list")
@click.option("--json", "as_json", is_flag=True, help="print a JSON object instead of a table")
def list_boards(as_json: bool) -> None:
    """Boards, their devices and clocks, and the presets known to fit each; then the
    Xilinx estimates cached by `vta fpga estimate` (Yosys synth_xilinx, no Vivado place &
    route; read from the cache, not re-synthesized; not in --json)."""
    from fpga.boards import BOARDS
    if as_json:
        click.echo(json.dumps({b.name: {"title": b.title, "device": b.device,
                                        "clock_mhz": b.clock_mhz, "mem_bytes": b.mem_bytes,
                                        "open_flow": b.open_flow, "fits": list(b.fits)}
                               for b in BOARDS.values()}, indent=1))
        return
    click.echo(f"{'board':<12} {'device':<22} {'clock':>6} {'DRAM':>7}  presets that fit "
               "(largest last)")
    for b in BOARDS.values():
        fits = ", ".join(b.fits) or (f"(none known; smallest: {b.smallest})" if b.open_flow else
                                     f"(not built here: Vivado project only; try {b.smallest})")
        click.echo(f"{b.name:<12} {b.device:<22} {b.clock_mhz:>4g}MHz {b.mem_bytes // 1024:>4}KiB"
                   f"  {fits}")
    from fpga.xilinx_estimate import LABEL, PARTS, cached, table
    rows = cached()
    click.echo("\n" + (table(rows) if rows else
                       f"{LABEL}: none cached for {', '.join(PARTS)}; make one with "
                       "vta fpga estimate --part PART --config PRESET"))


@fpga.command("build")
@click.option("--board", required=True, metavar="NAME", help="board name (vta fpga list)")
@click.option("--config", "preset", default=None, metavar="PRESET", callback=check_config,
              help="accelerator preset [default: the largest known to fit the board, else its smallest]")
@click.option("--clock", "clock_mhz", type=float, default=None, metavar="MHZ",
              help="SoC clock, MHz [default: the board's]")
@click.option("--out", "out_dir", default=None, metavar="DIR",
              help="build folder [default: build/fpga/<board>/<preset>_<clock>mhz]")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="place and route with nextpnr seeds 1..N, min(N, cores) at a time, each in "
                   "<out>/seed<K>/, and keep the highest Fmax (1: nextpnr's default seed)")
def build_cmd(board: str, preset: str | None, clock_mhz: float | None, out_dir: str | None,
              seeds: int) -> None:
    """Synthesize, place and route; write the bitstream and report.json.

    The summary names the slowest path (from which register through which units
    to which) and, with --seeds, every seed's Fmax in MHz; a seed that fails or
    runs past its limit is listed, not fatal. Exits 1 with a message when the
    board is unknown, a tool is missing, the design does not fit, every seed
    failed, or timing is not met at --clock; 2 (a usage error) for an unknown
    --config or --seeds below 1.
    """
    from fpga.boards import BoardError, get_board
    from fpga.build import FpgaBuildError, build
    try:
        b = get_board(board)
        rep = build(b.name, preset or b.default_preset, clock_mhz, out_dir, log=click.echo,
                    seeds=seeds)
    except (BoardError, FpgaBuildError) as e:
        raise click.ClickException(str(e)) from None
    if rep.get("vendor_flow"):
        return
    if not rep["timing_met"]:
        raise click.ClickException(
            f"timing not met: Fmax {rep['fmax_mhz']} MHz < {rep['clock_mhz']:g} MHz requested; "
            f"the bitstream is written but use --clock {int(rep['fmax_mhz'] or 0)} or lower"
            + ("" if seeds > 1 else ", or try more placements: --seeds 4"))


@fpga.command("estimate")
@click.option("--part", required=True, metavar="PART",
              help="xc7z020 (PYNQ-Z1, PYNQ-Z2), xczu3eg (Ultra96) or xczu7ev (ZCU104)")
@click.option("--config", "preset", required=True, metavar="PRESET", callback=check_config,
              help="accelerator preset or config file (an unknown name lists the presets)")
@click.option("--refresh", is_flag=True,
              help="synthesize again even when the cached estimate matches the RTL")
@click.option("--json", "as_json", is_flag=True, help="print a JSON object instead of a table")
def estimate_cmd(part: str, preset: str, refresh: bool, as_json: bool) -> None:
    """Xilinx LUTs, FFs, DSPs and 36 Kb block RAMs of PRESET's SoC against PART's totals.

    A Yosys synth_xilinx estimate (no Vivado place & route): Yosys synthesizes the
    SoC (accelerator, 256 KiB block RAM, UART bridge; about a minute for a small
    preset) and counts its cells; Vivado's own figures will differ and no Fmax comes
    with it. The result is cached per preset and family under build/fpga/xilinx/ (an
    RTL change synthesizes again) and `vta fpga list` shows it. Exits 1 with a message
    when the part is unknown, Yosys is missing or fails, or the design does not fit.
    """
    from fpga.xilinx_estimate import XilinxEstimateError, estimate, get_part, table
    try:
        get_part(part)    # before the minutes of elaboration and synthesis
        est = estimate(part, preset, refresh=refresh, log=lambda s: click.echo(s, err=True))
    except XilinxEstimateError as e:
        raise click.ClickException(str(e)) from None
    click.echo(json.dumps(est, indent=1) if as_json else table([est]))
    if not est["fits"]:
        raise click.ClickException(f"{est['preset']} does not fit {est['part']} "
                                   f"({est['boards']}) by this estimate: "
                                   f"{', '.join(est['overflow'])} over; try a smaller preset")
