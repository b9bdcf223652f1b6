#!/usr/bin/env bash
# System packages the test suite uses beyond pip: PoCL, the OpenCL runtime on
# the CPU that runs the GPU-style kernels. Installed with apt-get when this
# runs as root on Debian/Ubuntu; otherwise prints the command to run.
set -euo pipefail
if ! (ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 && ldconfig -p | grep -q libOpenCL.so.1); then
pkgs="pocl-opencl-icd ocl-icd-libopencl1"
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing $pkgs (OpenCL on the CPU) with apt-get"
    timeout 900 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq $pkgs >/dev/null
else
    echo "note: OpenCL tests need: sudo apt-get install $pkgs" >&2
fi
fi

# ---- web: WebAssembly modules, Node and browser tests (issue 21) ----------------------
# wasm-ld (Debian lld) links wasm32 modules; chromium runs the demo's browser test; the npm
# tools of driver/web (playwright-core, onnxruntime-web) install from its package-lock.json.
web_pkgs=""
command -v wasm-ld >/dev/null || ls /usr/bin/wasm-ld-* >/dev/null 2>&1 || web_pkgs="lld"
command -v chromium >/dev/null || web_pkgs="$web_pkgs chromium"
command -v node >/dev/null || web_pkgs="$web_pkgs nodejs npm"
if [ -n "$web_pkgs" ]; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "installing$web_pkgs (WebAssembly and browser tests) with apt-get"
        timeout 900 apt-get update -qq
        DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq $web_pkgs >/dev/null
    else
        echo "note: WebAssembly and browser tests need: sudo apt-get install$web_pkgs" >&2
    fi
fi
if command -v npm >/dev/null && [ ! -d "$(dirname "$0")/../driver/web/node_modules" ]; then
    (cd "$(dirname "$0")/../driver/web" && timeout 600 npm ci --no-audit --no-fund --silent) \
        || echo "note: npm ci in driver/web failed; the browser test and the wasm bench skip" >&2
fi
# ---- end web ----------------------------------------------------------------------------
