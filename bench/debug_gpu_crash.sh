#!/usr/bin/env bash
# Crashes seen on the GPU machine only (carry .gpu): runs the suites that
# crashed there with a SIGSEGV backtrace preloaded (bench/segv_trace.c;
# the machine has no gdb).
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/cc
B=/tmp/build-dbg
{ meson setup $B -Dtests=true --buildtype=debugoptimized --wrap-mode=nodownload && ninja -C $B; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
gcc -shared -fPIC -g -o /tmp/segv_trace.so bench/segv_trace.c -ldl || exit 1
export LD_PRELOAD=/tmp/segv_trace.so CLFUSE_DEVICE=gpu
CK_VERBOSITY=normal timeout 300 $B/tests/test_gemm 2>&1 | grep -E ":F:|:E:|Checks|segv_trace|clf_|test_" | head -30
for s in memory reductions fusion runtime; do
  CK_VERBOSITY=normal timeout 300 $B/tests/test_$s 2>&1 | grep -E ":F:|:E:|Checks|segv_trace" | head -8
done
timeout 200 $B/bench/bench_reductions --markdown 2>&1 | tail -12
