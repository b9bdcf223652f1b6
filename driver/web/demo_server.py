"""The digits demo's local web server: static files only, on 127.0.0.1 by default.

:func:`stage_demo` writes the demo (``demo/index.html``, ``demo/demo.mjs``, the runtime
``vta_runtime.mjs``, the model ``digits.wasm`` and held-out ``samples.json``) into one
folder; :func:`serve` serves that folder and nothing else over HTTP (GET and HEAD; no
directory listings, no uploads, no commands), so it needs no token. ``vta serve-demo``
is both in one command.
"""
from __future__ import annotations

import functools
import http.server
import ipaddress
import json
import os
import shutil

import numpy as np

from vta_hw.errors import VtaError

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO_FILES = (os.path.join(HERE, "demo", "index.html"), os.path.join(HERE, "demo", "demo.mjs"),
              os.path.join(HERE, "vta_runtime.mjs"))
#: seconds a connection may stay idle before the server drops it
REQUEST_TIMEOUT_S = 30


def digit_samples(npz_path: str, per_class: int = 1) -> list:
    """``[{"label": k, "image": [64 floats in 0..1]}]``: the first ``per_class`` held-out
    images of each digit of ``npz_path`` (``images`` uint8[N, 8, 8] in 0..16, ``labels``)."""
    with np.load(npz_path) as z:
        images, labels = z["images"], z["labels"]
    out = []
    for k in sorted(set(labels.tolist())):
        for i in np.flatnonzero(labels == k)[:per_class]:
            out.append({"label": int(k), "image": (images[i].reshape(-1) / 16).round(4).tolist()})
    return out


def stage_demo(folder: str, wasm: bytes, samples: list) -> str:
    """Write the demo's files into ``folder`` (created if absent); returns it.

    Args:
        wasm: the digits web module (``compiler.graph_lower.web.build_web``).
        samples: :func:`digit_samples`.
    """
    os.makedirs(folder, exist_ok=True)
    for path in DEMO_FILES:
        shutil.copyfile(path, os.path.join(folder, os.path.basename(path)))
    with open(os.path.join(folder, "digits.wasm"), "wb") as f:
        f.write(wasm)
    with open(os.path.join(folder, "samples.json"), "w") as f:
        json.dump(samples, f)
    return folder


class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    """Files of one folder by GET/HEAD; no listings; JavaScript modules and wasm typed."""

    timeout = REQUEST_TIMEOUT_S
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript",
                      ".wasm": "application/wasm", ".json": "application/json"}

    def list_directory(self, path):
        self.send_error(404, "no directory listings")
        return None

    def log_message(self, fmt, *args):          # quiet: the CLI prints where it serves
        pass


class DemoServerError(VtaError, ValueError):
    """The demo server cannot serve as asked (a non-loopback host, a port in use)."""


def check_host(host: str, allow_remote: bool = False) -> None:
    """Refuse a ``host`` that is not a loopback address unless ``allow_remote``.

    Raises:
        DemoServerError: the message says how to allow it.
    """
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback and not allow_remote:
        raise DemoServerError(f"host must be a loopback address such as 127.0.0.1, not {host!r} "
                         "(--allow-remote, or allow_remote=True, serves it to the network)")


def serve(folder: str, host: str = "127.0.0.1", port: int = 8000,
          allow_remote: bool = False) -> http.server.ThreadingHTTPServer:
    """A server (not yet started: call ``serve_forever``) of the files in ``folder``.

    Args:
        host: address to bind; a loopback address unless ``allow_remote``.
        port: TCP port; 0 picks a free one (``server.server_address[1]``).

    Raises:
        DemoServerError: ``folder`` is not a folder, ``host`` is not a loopback address and
            ``allow_remote`` is False, ``port`` is outside 0-65535, or the address cannot be
            bound (the port is taken).
    """
    if not os.path.isdir(folder):
        raise DemoServerError(f"the demo folder {folder!r} does not exist; stage it with "
                              "stage_demo")
    check_host(host, allow_remote)
    if not 0 <= port <= 65535:
        raise DemoServerError(f"port must be in 0-65535, not {port!r}")
    handler = functools.partial(_StaticHandler, directory=folder)
    try:
        server = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as e:
        raise DemoServerError(f"cannot serve on {host}:{port}: {e.strerror or e}; pick another "
                              "port (--port, or 0 for any free one)") from None
    server.daemon_threads = True
    return server
