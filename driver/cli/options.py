"""Options shared by several subcommands, and the checks of their values.

Convention: an option value that fails its check before any work (an unknown preset,
target kind or device) is a usage error, exit 2, as click's own checks (``--trials 0``,
``--input-shape axb``) are; its message names the option, the value and the valid ones.
"""
from __future__ import annotations

import click

from vta_hw.config import DEFAULT_PRESET, preset_names


def check_config(ctx, param, value):
    """click callback of ``--config``: an unknown preset or an unreadable config file is a
    usage error (``--config bogus: ...``, exit 2) before any work; None passes."""
    if value is None:
        return None
    from vta_hw.config import load_config
    try:
        load_config(value)
    except (ValueError, OSError) as e:
        raise click.UsageError(f"--config {value}: {e}", ctx=ctx) from None
    return value


def check_target(ctx, param, value):
    """click callback of ``--target``: an unknown target kind is a usage error (exit 2) that
    lists the valid ones (``compiler.build_model.target_kind``); the options after the kind
    are checked by the build."""
    from compiler.build_model import target_kind
    from compiler.codegen.llvm.target import split_cpus
    try:
        split_cpus(value)
    except ValueError as e:
        raise click.UsageError(f"--target {value!r}: {e}", ctx=ctx) from None
    try:
        target_kind(value)
    except ValueError:
        raise click.UsageError(
            f"--target {value!r}: unknown target; use --target llvm (host CPU; aarch64, armv7, "
            "wasm32 or 'llvm -mtriple=...' for another machine), --target cuda ('cuda "
            "-arch=sm_80'), --target opencl or --target vta (the accelerator)", ctx=ctx) from None
    return value


def check_aot_prefix(ctx, param, value):
    """click callback of ``--aot-prefix``: a value that cannot start C identifiers
    (``compiler.graph_lower.aot.check_prefix``) is a usage error (exit 2) naming it and the
    rule; None passes."""
    if value is None:
        return None
    from compiler.graph_lower.aot import check_prefix
    try:
        return check_prefix(value, "--aot-prefix")
    except ValueError as e:
        raise click.UsageError(str(e), ctx=ctx) from None


config_option = click.option(
    "--config", "config_name", default=DEFAULT_PRESET, show_default=True, metavar="PRESET|FILE",
    callback=check_config,
    help=f"accelerator preset ({', '.join(preset_names())}) or a config JSON file")


def check_place(ctx, param, value):
    """click callback of ``--place OP=SIDE`` (repeatable) -> ``{op type: side}`` for
    ``Placement(force=...)``; an item that is not OP=SIDE, an OP that is not an op type the
    accelerator runs (``compiler.quant.placement.ACCEL_OPS``; a node name is the usual slip) or a
    SIDE other than cpu or vta is a usage error (exit 2) naming ``--place`` and the value."""
    from compiler.quant.placement import ACCEL_OPS, SIDES
    ops = ", ".join(ACCEL_OPS)
    out = {}
    for item in value:
        op, eq, side = item.partition("=")
        op, side = op.strip().lower(), side.strip().lower()
        if not eq:
            raise click.UsageError(f"--place {item}: takes OP=SIDE, e.g. --place dense=cpu",
                                   ctx=ctx)
        if op not in ACCEL_OPS:
            raise click.UsageError(f"--place {item}: {op!r} is not an op type; OP must be an op "
                                   f"type ({ops}), not a node name, and every node of that type "
                                   "goes to SIDE", ctx=ctx)
        if side not in SIDES:
            raise click.UsageError(f"--place {item}: SIDE must be {' or '.join(SIDES)}, not "
                                   f"{side!r}", ctx=ctx)
        out[op] = side
    return out
