"""The local runner's worker process: ``python -m driver.tune.worker HOST PORT``.

Connects back to the runner over a local socket, sends the token from the
environment variable ``VTA_TUNE_KEY`` (so the runner knows it is its own worker),
then answers each ``(kind, payload, config, options)`` with ``measure.measure``'s
result until it receives None or the connection closes.
"""
from __future__ import annotations

import os
import socket
import sys
from multiprocessing.connection import Connection

from .measure import measure


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
        conn.send(measure(*msg))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
