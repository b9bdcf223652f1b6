"""The digits demo: its static server (loopback, files only) and the page in headless Chromium."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

from driver.web.demo_server import DemoServerError, check_host, digit_samples, serve, stage_demo
from tests.cli_util import run_cli
from tests.driver.web_util import (DIGITS, HELDOUT, needs_chromium, needs_node, needs_playwright,
                                   needs_wasm_ld, node_module)

HERE = os.path.dirname(os.path.abspath(__file__))

# flags the closed network needs (/work/shared/TOOLCHAIN.md); the profile is a fresh folder
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

BROWSER = """
import { chromium } from "playwright-core";
const [url, shot, profile, flags, digit] = process.argv.slice(1);
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium", headless: true, args: JSON.parse(flags), timeout: 60000 });
try {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url, { timeout: 30000 });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  await page.click(`#picker button[data-label="${digit}"]`);
  const shown = await page.textContent("#result");
  await page.click("#clear");
  const box = await page.locator("#pad").boundingBox();      // draw a vertical stroke: a 1
  await page.mouse.move(box.x + box.width / 2, box.y + box.height * 0.1);
  await page.mouse.down();
  for (let k = 1; k <= 16; k++) {
    await page.mouse.move(box.x + box.width / 2, box.y + box.height * (0.1 + 0.05 * k));
  }
  await page.mouse.up();
  const drawn = await page.textContent("#result");
  await page.click(`#picker button[data-label="${digit}"]`);
  await page.screenshot({ path: shot });
  console.log(JSON.stringify({ shown, drawn, errors, status: await page.textContent("#status") }));
} finally {
  await context.close();
}
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The staged demo served on 127.0.0.1 at a free port; yields its URL."""
    if needs_wasm_ld.args[0]:                       # the skipif mark's condition
        pytest.skip(needs_wasm_ld.kwargs["reason"])
    from compiler.graph_lower.web import build_web
    wasm = build_web(DIGITS)
    folder = stage_demo(str(tmp_path_factory.mktemp("demo")), wasm, digit_samples(HELDOUT))
    server = serve(folder, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _status(url: str, method: str = "GET") -> tuple:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type")
    except urllib.error.HTTPError as err:
        return err.code, None


def test_server_serves_only_the_demo_files(demo):
    assert _status(demo) == (200, "text/html")
    assert _status(demo + "vta_runtime.mjs") == (200, "text/javascript")   # module scripts need it
    assert _status(demo + "digits.wasm") == (200, "application/wasm")
    assert _status(demo + "../../etc/passwd")[0] == 404
    assert _status(demo + "index.html", "POST")[0] == 501                  # no uploads, no commands
    assert _status(demo + "index.html", "PUT")[0] == 501


def test_server_and_cli_refuse_a_non_loopback_host(tmp_path):
    with pytest.raises(DemoServerError, match=r"host must be a loopback address such as 127.0.0.1, "
                                         r"not '0.0.0.0' \(--allow-remote"):
        check_host("0.0.0.0")
    check_host("::1")
    res = run_cli("serve-demo", "--host", "10.1.2.3")
    assert res.exit_code == 1 and "not '10.1.2.3'" in res.output
    assert "internal error" not in run_cli("serve-demo", "--host", "0.0.0.0").output


def test_cli_refuses_a_bad_or_taken_port_in_one_line():
    res = run_cli("serve-demo", "--port", "99999")
    assert res.exit_code == 2 and "99999 is not in the range" in res.output
    taken = serve(HERE, "127.0.0.1", 0)
    try:
        res = run_cli("serve-demo", "--port", str(taken.server_address[1]))
    finally:
        taken.server_close()
    assert res.exit_code == 1, res.output
    assert f"cannot serve on 127.0.0.1:{taken.server_address[1]}" in res.output
    assert "internal error" not in res.output and "pick another port" in res.output


@needs_wasm_ld
def test_sigterm_removes_the_staged_folder(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.Popen([sys.executable, "-m", "driver.cli", "serve-demo", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = p.stdout.readline()
        assert "serving the digits demo from" in line, line
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    finally:
        p.kill()
    assert not [f for f in os.listdir(tmp_path) if f.startswith("vta_demo_")]


def test_samples_are_one_scaled_image_per_digit():
    samples = digit_samples(HELDOUT)
    assert [s["label"] for s in samples] == list(range(10))
    assert all(len(s["image"]) == 64 and 0 <= min(s["image"]) and max(s["image"]) <= 1
               for s in samples)


@needs_node
@needs_chromium
@needs_playwright
def test_page_classifies_a_picked_and_a_drawn_digit_in_chromium(demo, tmp_path):
    shot = tmp_path / "demo.png"
    got = node_module(BROWSER, demo, shot, tmp_path / "profile", json.dumps(FLAGS), 3,
                      timeout=180)
    assert got["errors"] == []
    assert got["shown"] == "3", got
    assert got["drawn"] == "1", got
    assert got["status"].startswith("model loaded:")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
