"""Turns the project's own exceptions into one-line CLI errors with exit code 1."""
from __future__ import annotations

import functools

import click

from vta_hw.config import ConfigError
from vta_hw.isa import DecodeError
from vta_hw.program import ProgramFormatError


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean bad input or an unreachable device, not a bug: shown
    without a traceback."""
    from compiler.codegen.llvm.wasm_link import WasmLinkError
    from driver.backends.fpga import FpgaError
    from driver.device import DeviceError
    from sim.errors import SimError
    return (ConfigError, DecodeError, ProgramFormatError, SimError, DeviceError, FpgaError,
            WasmLinkError, OSError, KeyError, ValueError)


def friendly(fn):
    """Decorator: report a user error as ``error: <message>`` and exit 1."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            raise  # `vta ... | head`: click exits quietly, no "Error: Broken pipe"
        except user_errors() as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else e
            raise click.ClickException(str(msg)) from None
    return wrapper


def read_npz(path: str, option: str, holds: str) -> dict:
    """All arrays of the .npz ``path`` given to ``option``; a clear error for an .npy file,
    an unreadable file or pickled (object) arrays. ``holds`` describes what it should hold."""
    import numpy as np
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{option} {path}: cannot read it as an .npz archive ({exc}); "
                                   f"{option} expects an .npz (np.savez) holding {holds}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise click.ClickException(f"{option} {path}: is a single-array .npy file; {option} "
                                   f"expects an .npz archive (np.savez) holding {holds}")
    with data:
        out = {}
        for k in data.files:
            try:
                out[k] = data[k]
            except ValueError:
                raise click.ClickException(
                    f"{option} {path}: array {k!r} holds Python objects (pickled); {option} "
                    "needs plain numeric arrays (save them with a numeric dtype)") from None
        return out


def read_npy(path: str, option: str):
    """The single array of the .npy ``path`` given to ``option`` (no pickles, no .npz)."""
    import numpy as np
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{option} {path}: cannot read it as an .npy array ({exc}); "
                                   f"{option} expects a single-array .npy file (np.save)") from None
    if isinstance(data, np.lib.npyio.NpzFile):
        data.close()
        raise click.ClickException(f"{option} {path}: is an .npz archive; {option} expects a "
                                   "single-array .npy file (np.save)")
    return data


def plural(n: int, word: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def output_path(path: str | None, option: str, folder: bool = False) -> str | None:
    """Check an output path given to ``option`` and create its parent folders (every command
    does, like ``vta example``); a clear error when it cannot be written there."""
    from pathlib import Path
    if path is None:
        return None
    p = Path(path)
    if folder and p.exists() and not p.is_dir():
        raise click.ClickException(f"{option} {path}: is an existing file; {option} names a "
                                   "folder to write (remove the file or pick another name)")
    if not folder and p.is_dir():
        raise click.ClickException(f"{option} {path}: is a folder; {option} names a file to write")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.ClickException(f"{option} {path}: cannot create its folder {str(p.parent)!r} "
                                   f"({e.strerror or e})") from None
    # a probe file, so an unwritable place fails now, not after minutes of work
    import tempfile
    try:
        with tempfile.NamedTemporaryFile(dir=p.parent, prefix=".vta-probe-"):
            pass
    except OSError as e:
        raise click.ClickException(f"{option} {path}: cannot write in the folder "
                                   f"{str(p.parent)!r} ({e.strerror or e}); pick a writable "
                                   "place") from None
    return path
