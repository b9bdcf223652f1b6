#!/usr/bin/env bash
# System packages the test suite uses beyond pip: PoCL, the OpenCL runtime on
# the CPU that runs the GPU-style kernels. Installed with apt-get when this
# runs as root on Debian/Ubuntu; otherwise prints the command to run.
set -euo pipefail
if ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 && ldconfig -p | grep -q libOpenCL.so.1; then
    exit 0
fi
pkgs="pocl-opencl-icd ocl-icd-libopencl1"
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing $pkgs (OpenCL on the CPU) with apt-get"
    timeout 900 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq $pkgs >/dev/null
else
    echo "note: OpenCL tests need: sudo apt-get install $pkgs" >&2
fi
