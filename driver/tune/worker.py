"""The tuning worker process: ``python -m driver.tune.worker HOST PORT``.

Connects back to its :class:`~driver.tune.process.WorkerProcess` over a local
socket, sends the token from the environment variable ``VTA_TUNE_KEY`` (so the
runner knows it is its own worker), then answers each ``(op, args)`` with
``OPS[op](*args)`` (``("ok", value)`` or ``("error", one line)``, never raising
for a bad candidate) until it receives None or the connection closes.
"""
from __future__ import annotations

import os
import socket
import sys
from multiprocessing.connection import Connection

from .build import build, run
from .measure import measure

#: op -> function(*args) -> ("ok", value) | ("error", one line)
OPS = {"measure": measure, "build": build, "run": run}


def main(host: str, port: int) -> None:
    conn = Connection(socket.create_connection((host, port)).detach())
    conn.send(os.environ["VTA_TUNE_KEY"])
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        op, args = msg
        conn.send(OPS[op](*args) if op in OPS else
                  ("error", f"no worker op {op!r}; ops: {sorted(OPS)}"))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
