#!/usr/bin/env bash
# System packages the test suite uses beyond pip, installed with apt-get when this runs
# as root on Debian/Ubuntu (otherwise it prints the command to run):
#   - PoCL, the OpenCL runtime on the CPU that runs the GPU-style kernels;
#   - the AArch64 and ARMv7 hard-float cross toolchains, qemu-user to run their programs
#     and LLD: the AOT harness on other hosts (driver/aot/toolchains.py, docs/deploy.md).
# Every apt-get call is bounded by a timeout.
set -euo pipefail
pkgs=""
if ! { ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 && ldconfig -p | grep -q libOpenCL.so.1; }; then
    pkgs="$pkgs pocl-opencl-icd ocl-icd-libopencl1"
fi
for tool_pkg in aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu \
                arm-linux-gnueabihf-gcc:gcc-arm-linux-gnueabihf \
                qemu-aarch64:qemu-user qemu-arm:qemu-user ld.lld:lld; do
    command -v "${tool_pkg%%:*}" >/dev/null || pkgs="$pkgs ${tool_pkg#*:}"
done
[ -e /usr/aarch64-linux-gnu/lib/libc.a ] || pkgs="$pkgs libc6-dev-arm64-cross"
[ -e /usr/arm-linux-gnueabihf/lib/libc.a ] || pkgs="$pkgs libc6-dev-armhf-cross"
pkgs=$(echo $pkgs | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ -n "${pkgs// }" ]; then
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing $pkgs(OpenCL on the CPU, cross toolchains, qemu-user) with apt-get"
    timeout 900 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 1800 apt-get install -y -qq $pkgs >/dev/null
else
    echo "note: the OpenCL and cross-host tests need: sudo apt-get install $pkgs" >&2
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
