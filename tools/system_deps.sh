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
if [ -z "${pkgs// }" ]; then
    exit 0
fi
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing $pkgs(OpenCL on the CPU, cross toolchains, qemu-user) with apt-get"
    timeout 900 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 1800 apt-get install -y -qq $pkgs >/dev/null
else
    echo "note: the OpenCL and cross-host tests need: sudo apt-get install $pkgs" >&2
fi
