#!/usr/bin/env bash
# Adds to .gpu/ (after ../shared/gpu/prepare, on this machine) the Debian
# packages the GPU machine's build needs beyond the ones prepare fetches:
# protoc-c and protobuf-c (the binary ONNX reader is generated with them)
# and libonnx-dev (its onnx.proto). .gpu/env.sh unpacks every .deb there
# into /tmp/gpu-root on the GPU machine. Without them the build stops at
# meson setup ("protoc-c not found"), which cost a call on 2026-12-07.
#     ../shared/gpu/prepare && bash bench/gpu_prepare_onnx.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)/.gpu"
apt-get download -qq protobuf-c-compiler libprotobuf-c-dev libprotobuf-c1 libprotoc32 libprotobuf32 libonnx-dev \
  2>&1 | grep -v unsandboxed || true
ls -1 ./*.deb | grep -E "protobuf|protoc|onnx"
