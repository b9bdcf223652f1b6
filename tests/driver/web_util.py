"""Shared by the web module tests: skips that name the missing package, and Node runs."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WEB = os.path.join(ROOT, "driver", "web")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")
HELDOUT = os.path.join(ROOT, "examples", "digits", "heldout.npz")

needs_node = pytest.mark.skipif(shutil.which("node") is None,
                                reason="node is not installed (Debian package 'nodejs')")
needs_wasm_ld = pytest.mark.skipif(
    shutil.which("wasm-ld") is None and not glob.glob("/usr/bin/wasm-ld-*"),
    reason="wasm-ld is not installed (Debian package 'lld')")
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None,
                                    reason="chromium is not installed (Debian package 'chromium')")
needs_playwright = pytest.mark.skipif(
    not os.path.isdir(os.path.join(WEB, "node_modules", "playwright-core")),
    reason="npm package 'playwright-core' is not installed (cd driver/web && npm ci)")


def node_module(script: str, *args, timeout: float = 120) -> dict:
    """Run ``script`` (an ES module's text, which may import ``RUNTIME``) in Node with
    ``args``; the JSON object it prints last."""
    proc = subprocess.run(["node", "--input-type=module", "-e", script, "--", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=WEB)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


RUNTIME = "file://" + os.path.join(WEB, "vta_runtime.mjs")
