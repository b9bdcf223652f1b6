"""``vta disasm``: one readable line per instruction of a program file."""
from __future__ import annotations

import click

from driver.cli.errors import friendly, load_program
from vta_hw.isa import describe


@click.command()
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--uops", is_flag=True, help="also list the uop buffer")
@friendly
def disasm(program: str, uops: bool) -> None:
    """Print PROGRAM's instructions: index, opcode, dependency flags, fields.

    Flags read pp/pn = pop prev/next, Pp/Pn = push prev/next.
    """
    prog = load_program(program)
    click.echo(f"; {program}: {len(prog.insns)} instructions, {len(prog.uops)} uops, "
               f"config {prog.config.name}")
    for b in prog.buffers:
        click.echo(f"; buffer {b.name:<10} {b.kind:<7} {b.dtype:<6} {b.shape} at byte {b.offset}")
    width = len(str(max(len(prog.insns) - 1, 0)))
    for k, insn in enumerate(prog.insns):
        click.echo(f"{k:>{width}}  {describe(insn)}")
    if uops:
        for k, u in enumerate(prog.uops):
            click.echo(f"uop {k:>{width}}  dst={u.dst} src={u.src} wgt={u.wgt}")
