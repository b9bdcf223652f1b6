"""How the CLI reports failures: the project's own errors (``vta_hw.errors.VtaError``) and
files that cannot be opened as one-line ``Error:`` messages with exit code 1; anything else
is a bug in the stack, reported as an internal error (type, where, how to report it), with
the full traceback under ``vta --debug``."""
from __future__ import annotations

import contextlib
import errno
import functools
import os
import traceback
import warnings

import click

from vta_hw.errors import VtaError

#: exit status of an internal error (BSD sysexits EX_SOFTWARE)
INTERNAL_EXIT = 70
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class InternalError(click.ClickException):
    """A bug in the stack (not bad input): a short report instead of a traceback."""
    exit_code = INTERNAL_EXIT

    def __init__(self, exc: BaseException):
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if os.path.abspath(f.filename).startswith(_ROOT)] or frames
        where = ""
        if ours:
            f = ours[-1]
            where = f" in {os.path.relpath(f.filename, _ROOT)}:{f.lineno} ({f.name})"
        text = str(exc).splitlines()[0] if str(exc) else "(no message)"
        super().__init__(
            f"internal error: {type(exc).__name__}{where}: {text}\n"
            "This is a bug in vta, not a problem with your input; please report it on the "
            "project's issue tracker with the command you ran and the traceback that "
            "`vta --debug ...` prints.")


def debugging() -> bool:
    """Whether ``vta --debug`` was given (show tracebacks of internal errors)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("debug"))


#: packages whose warnings the CLI shows as one ``warning: ...`` line (no source line)
_OUR_PACKAGES = ("compiler", "driver", "sim", "vta_hw", "fpga")


@contextlib.contextmanager
def clean_warnings():
    """Show warnings of the stack's own classes (``TuningLogWarning``, ...) as one
    ``warning: <message>`` line on stderr instead of Python's two-line form; others as usual."""
    with warnings.catch_warnings():
        show = warnings.showwarning

        def echo(message, category, *args, **kw):
            if category.__module__.split(".")[0] in _OUR_PACKAGES:
                click.echo(f"warning: {message}", err=True)
            else:
                show(message, category, *args, **kw)
        warnings.showwarning = echo
        yield


def friendly(fn):
    """Decorator: a ``VtaError``, or an ``OSError`` that names its file, becomes
    ``Error: <message>`` with exit 1; any other exception an :class:`InternalError` (exit
    70), or its traceback under ``--debug``; the stack's own warnings show as one
    ``warning:`` line each (:func:`clean_warnings`)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with clean_warnings():
                return fn(*args, **kwargs)
        except (BrokenPipeError, click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # `vta ... | head`: click exits quietly, no "Error: Broken pipe"
        except VtaError as e:
            raise click.ClickException(str(e)) from None
        except OSError as e:
            if e.filename is None:
                if debugging():
                    raise
                raise InternalError(e) from None
            names = f"{e.filename} -> {e.filename2}" if e.filename2 else str(e.filename)
            raise click.ClickException(f"{names}: {e.strerror or e}") from None
        except Exception as e:
            if debugging():
                raise
            raise InternalError(e) from None
    return wrapper


def read_npz(path: str, option: str, holds: str) -> dict:
    """All arrays of the .npz ``path`` given to ``option``; a clear error for an .npy file,
    an unreadable file or pickled (object) arrays. ``holds`` describes what it should hold."""
    import numpy as np
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:      # EOFError: an empty file
        raise click.ClickException(f"{option} {path}: cannot read it as an .npz archive "
                                   f"({exc or type(exc).__name__}); "
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


def check_input_file(path: str | None, option: str, fix: str) -> None:
    """An input file given to ``option`` must exist and be a file, checked before any work
    (exit 1, as every missing file); ``fix`` says how to get one. None passes."""
    import os
    if path is None or os.path.isfile(path):
        return
    what = "is a folder" if os.path.isdir(path) else "does not exist"
    raise click.ClickException(f"{option} {path}: {what}; {fix}")


def check_log_input(path: str, option: str) -> None:
    """A tuning log given to ``option`` must exist and hold some tuning record (checked
    before any work, so a missing log, a model or an .npz given by mistake is one error
    line, not a warning per line)."""
    from compiler.autotune.record import NotATuningLogError, check_log
    check_input_file(path, option, "write one with `vta tune MODEL -o LOG`")
    try:
        check_log(path)
    except NotATuningLogError as e:
        raise click.ClickException(f"{option} {e}; give a log that `vta tune MODEL -o LOG` "
                                   "wrote") from None


def read_npy(path: str, option: str):
    """The single array of the .npy ``path`` given to ``option`` (no pickles, no .npz)."""
    import numpy as np
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:      # EOFError: an empty file
        raise click.ClickException(f"{option} {path}: cannot read it as an .npy array "
                                   f"({exc or type(exc).__name__}); "
                                   f"{option} expects a single-array .npy file (np.save)") from None
    if isinstance(data, np.lib.npyio.NpzFile):
        data.close()
        raise click.ClickException(f"{option} {path}: is an .npz archive; {option} expects a "
                                   "single-array .npy file (np.save)")
    return data


def check_input_shapes(ctx, param, value):
    """click callback of ``--input-shape``: a malformed or repeated shape is a usage error
    (exit 2) before any work; the value passes through unchanged."""
    from compiler.frontend import parse_input_shapes
    try:
        parse_input_shapes(value)
    except VtaError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return value


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
        why = e.strerror or str(e)
        if e.errno == errno.ENOENT and p.parent.is_dir():   # /proc: the folder refuses files
            why = "the folder exists but does not take new files"
        raise click.ClickException(f"{option} {path}: cannot write in the folder "
                                   f"{str(p.parent)!r} ({why}); pick a writable "
                                   "place") from None
    return path


#: where program files come from, for an error about a file that is not one
PROGRAM_SOURCES = ("write one with `vta example gemm -o F.vtaprog`, or take one from the "
                   "programs/ folder of a module that `vta compile --target vta` wrote")


def load_program(path: str):
    """The ``vta_hw.program.Program`` in the file ``path`` given as PROGRAM; a missing file,
    or one that is not a program file at all (another format: bad magic), gets an error
    saying where program files come from; a damaged program file keeps its own message."""
    from vta_hw.program import Program
    from vta_hw.program_file import MAGIC, ProgramFormatError
    try:
        return Program.load(path)
    except FileNotFoundError:
        raise click.ClickException(f"PROGRAM {path}: no such file; give a program file "
                                   f"(.vtaprog): {PROGRAM_SOURCES}") from None
    except ProgramFormatError as e:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
        if MAGIC.startswith(head):   # a program file, damaged: its message says how
            raise
        raise click.ClickException(f"PROGRAM {e}; PROGRAM takes a VTA program file (.vtaprog): "
                                   f"{PROGRAM_SOURCES}") from None
