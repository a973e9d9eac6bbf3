#!/usr/bin/env bash
# Runs on the GPU machine through the device tool (see shared BENCH.md):
# builds libclfuse against NVIDIA's OpenCL driver, runs the demo and the
# benchmarks on the GPU and on PoCL there, and PyTorch's anchors in the same
# call so that ratios come from one run. Results land in $OUT.
#     bash bench/run_gpu.sh [--tests]     (carry .gpu)
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=/tmp/build-gpu
tests=false; [ "${1:-}" = "--tests" ] && tests=true
if ! { meson setup $B -Dtests=$tests --buildtype=release --wrap-mode=nodownload && ninja -C $B; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ clinfo -l; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; git log -1 --format='commit %H %cd'; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
if $tests; then
  CLFUSE_DEVICE=gpu meson test -C $B --num-processes 8 --print-errorlogs > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^(Ok|Fail|Skipped|Timeout|Expected)" "$OUT/tests_gpu.txt"
fi
CLFUSE_DEVICE=gpu $B/examples/demo_chain > "$OUT/demo_gpu.txt" 2>&1; tail -6 "$OUT/demo_gpu.txt"
for b in $B/bench/bench_*; do
  [ -x "$b" ] || continue
  n=$(basename "$b")
  CLFUSE_DEVICE=gpu "$b" --markdown > "$OUT/${n}_gpu.md" 2> "$OUT/${n}_gpu.err"; cat "$OUT/${n}_gpu.md"; tail -3 "$OUT/${n}_gpu.err"
  CLFUSE_DEVICE=cpu "$b" --markdown > "$OUT/${n}_pocl.md" 2> "$OUT/${n}_pocl.err"; cat "$OUT/${n}_pocl.md"; tail -3 "$OUT/${n}_pocl.err"
done
PYTHONUNBUFFERED=1 timeout 300 python3 .gpu/torch_anchors.py cuda > "$OUT/torch_cuda.txt" 2>&1; cat "$OUT/torch_cuda.txt"
