#!/usr/bin/env bash
# Installs what building and testing libclfuse needs on Debian 12 (as root):
# compilers and build tools, the OpenCL ICD loader and headers, PoCL as the
# CPU OpenCL device, Check for the tests, oclgrind (the OpenCL simulator
# the oclgrind test runs every kernel template family under), and for the
# binary ONNX reader protobuf-c (library and protoc-c) with the onnx.proto
# schema of libonnx-dev; python3-onnx writes the test models
# (tests/onnx/make_models.py); clang with its libFuzzer and sanitizer runtimes
# builds the fuzzer over the ONNX loader (tests/fuzz_onnx/run.sh);
# mesa-opencl-icd is Mesa's rusticl, whose llvmpipe device is the second
# OpenCL stack .ci/run tests on; libonnx-testdata holds ONNX's node tests
# (suite onnx_node); graphviz renders `clfuse dot`.
set -euo pipefail

packages=(
  gcc g++ meson ninja-build pkg-config python3 python3-numpy binutils
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  check libsubunit-dev
  oclgrind
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3-onnx
  clang libclang-rt-14-dev
  mesa-opencl-icd libonnx-testdata graphviz
)
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y "${packages[@]}"
