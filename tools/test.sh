#!/usr/bin/env bash
# Builds libclfuse and runs the whole test suite.
# Usage: tools/test.sh [meson setup options...]   (BUILDDIR: default ./build)
# Options are applied to an existing build directory too.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${BUILDDIR:-build}

if [[ -f $builddir/build.ninja ]]; then
  if (($#)); then meson configure "$builddir" "$@"; fi
else
  meson setup "$builddir" --werror "$@"
fi
ninja -C "$builddir"
meson test -C "$builddir" --print-errorlogs
