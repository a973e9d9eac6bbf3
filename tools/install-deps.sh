#!/usr/bin/env bash
# Installs what building and testing libclfuse needs on Debian 12 (as root):
# compilers and build tools, the OpenCL ICD loader and headers, PoCL as the
# CPU OpenCL device, and Check for the tests.
set -euo pipefail

packages=(
  gcc g++ meson ninja-build pkg-config python3 python3-numpy binutils
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  check libsubunit-dev
)
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y "${packages[@]}"
