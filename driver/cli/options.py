"""Options shared by several subcommands."""
from __future__ import annotations

import click

from vta_hw.config import DEFAULT_PRESET, preset_names

config_option = click.option(
    "--config", "config_name", default=DEFAULT_PRESET, show_default=True, metavar="PRESET|FILE",
    help=f"accelerator preset ({', '.join(preset_names())}) or a config JSON file")
