"""``vta serve-demo``: the digits model compiled to WebAssembly, classified in a browser page."""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading

import click

from driver.cli.errors import friendly

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = os.path.join(ROOT, "examples", "digits")


@click.command("serve-demo")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="TCP port (0: any free one)")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to bind; loopback only unless --allow-remote")
@click.option("--allow-remote", is_flag=True, help="allow a non-loopback --host")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="folder to stage the demo in (default: a temporary one)")
@friendly
def serve_demo(port, host, allow_remote, out):
    """Serve the digits demo (draw or pick a digit; it is classified in the browser).

    \b
    Compiles examples/digits/digits_cnn.onnx for wasm32 ahead of time, stages the page,
    the JavaScript runtime and the model in one folder and serves only that folder
    (static files, GET only) until Ctrl-C.
    """
    from compiler.graph_lower.web import build_web
    from driver.web.demo_server import check_host, digit_samples, serve, stage_demo

    check_host(host, allow_remote)
    with tempfile.TemporaryDirectory(prefix="vta_demo_") as tmp, _sigterm_as_interrupt():
        folder = out or tmp
        os.makedirs(folder, exist_ok=True)
        server = serve(folder, host, port, allow_remote)   # a taken port fails before the build
        try:
            stage_demo(folder, build_web(os.path.join(DIGITS, "digits_cnn.onnx")),
                       digit_samples(os.path.join(DIGITS, "heldout.npz")))
            bound_host, bound_port = server.server_address[:2]
            click.echo(f"serving the digits demo from {folder} at "
                       f"http://{bound_host}:{bound_port}/ (Ctrl-C stops)")
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped")
        finally:
            server.server_close()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM stops the server as Ctrl-C does, so the staged temporary folder is removed."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    if threading.current_thread() is not threading.main_thread():
        yield                                  # only the main thread may set handlers
        return
    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
