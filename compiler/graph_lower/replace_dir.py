"""Put a finished folder in place of another, so that concurrent writers and readers never
see the destination missing or half written, and nothing is left behind.

Writers of one parent folder serialize on an ``flock`` of that folder (no lock file is
created; the lock goes with the process). On Linux the swap is ``renameat2`` with
``RENAME_EXCHANGE``: at every instant the destination is one whole folder, the old or
the new; elsewhere it is two renames (old aside, new in), which leaves the destination
missing for the moment between them, but never to another writer.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from vta_hw.errors import VtaError

#: how long a save waits for other processes saving into the same folder, seconds
LOCK_TIMEOUT_S = 120.0
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class SaveLockTimeout(VtaError, TimeoutError):
    """Another process kept the destination's folder locked for longer than the timeout."""


def _renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn


_EXCHANGE = _renameat2()


def _exchange(a: Path, b: Path) -> bool:
    """Swap folders ``a`` and ``b`` atomically; False where the system cannot."""
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # file system without exchange
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


class _FolderLock:
    """An exclusive ``flock`` of the folder ``path``, waited for at most ``timeout_s``."""

    def __init__(self, path: Path, timeout_s: float):
        self.path, self.timeout_s = path, timeout_s

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDONLY)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise SaveLockTimeout(
                        f"{self.path}: another process has been saving into this folder for "
                        f"more than {self.timeout_s:g} s; wait for it to finish (or stop it) "
                        "and save again") from None
                time.sleep(0.01)

    def __exit__(self, *exc):
        os.close(self.fd)  # releases the flock


def replace_dir(new: Path, dest: Path, timeout_s: float = LOCK_TIMEOUT_S) -> None:
    """Move the finished folder ``new`` to ``dest`` (same parent), replacing any folder there.

    Raises:
        SaveLockTimeout: other writers held the parent folder for more than ``timeout_s``.
        OSError: a rename failed (``new`` is left for the caller to remove).
    """
    with _FolderLock(dest.parent, timeout_s):
        if not dest.exists():
            os.rename(new, dest)
            return
        if _exchange(new, dest):
            shutil.rmtree(new, ignore_errors=True)  # `new` now holds the old folder
            return
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
        old.rmdir()
        os.rename(dest, old)
        os.rename(new, dest)
        shutil.rmtree(old, ignore_errors=True)
