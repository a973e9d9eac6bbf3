#!/usr/bin/env bash
# Runs on the GPU machine through the device tool (see shared BENCH.md):
# builds libclfuse against NVIDIA's OpenCL driver, runs the demo and the
# benchmarks on the GPU and on PoCL there, and PyTorch's anchors in the same
# call so that ratios come from one run. Results land in $OUT.
#     bash bench/run_gpu.sh [--tests [--tests-only]]     (carry .gpu)
# SUITES="faults attention ..." runs those suites only, TEST_TIMEOUT (s,
# default 400) bounds them; a build already in /tmp/build-gpu is reused.
# .gpu needs ../shared/gpu/prepare, then bench/models/prepare_gpu.sh (protobuf-c
# and onnx.proto, which the build needs).
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=/tmp/build-gpu
tests=false; [ "${1:-}" = "--tests" ] && tests=true
proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
[ -f "$proto" ] || proto=/usr/include/onnx/onnx.proto
setup() { [ -f $B/build.ninja ] || meson setup $B -Dtests=$tests --buildtype=release --wrap-mode=nodownload \
  -Donnx_proto=$proto; }
if ! { setup && ninja -C $B; } >> "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ clinfo -l; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; cat .gpu/commit 2>/dev/null; } >> "$OUT/log.txt" 2>&1
cat "$OUT/log.txt"
if $tests; then
  # The suites run on the GPU (their default device) and, for the tests that
  # ask for it by name, on PoCL there. --tests-only stops after them.
  suites=(); for x in ${SUITES:-}; do suites+=(--suite "$x"); done
  CLFUSE_DEVICE=gpu timeout "${TEST_TIMEOUT:-400}" meson test -C $B --num-processes 12 --print-errorlogs "${suites[@]}" \
    > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout|Expected)" "$OUT/tests_gpu.txt"
  [ "${2:-}" = "--tests-only" ] && exit 0
fi
CLFUSE_DEVICE=gpu $B/examples/demo_chain > /tmp/demo.txt 2>&1; cat /tmp/demo.txt >> "$OUT/log.txt"; tail -6 /tmp/demo.txt
for n in bench_pointwise bench_reductions bench_gemm; do
  b=$B/bench/$n
  CLFUSE_DEVICE=gpu "$b" --markdown > "$OUT/${n}_gpu.md" 2>> "$OUT/log.txt"; cat "$OUT/${n}_gpu.md"
  CLFUSE_DEVICE=cpu "$b" --markdown > "$OUT/${n}_pocl.md" 2>> "$OUT/log.txt"; cat "$OUT/${n}_pocl.md"
done
# GEMMs autotuned (the tuning itself is timed into the compile, not the runs).
CLFUSE_DEVICE=gpu $B/bench/bench_gemm --markdown --autotune > "$OUT/bench_gemm_gpu_autotuned.md" 2>> "$OUT/log.txt"
cat "$OUT/bench_gemm_gpu_autotuned.md"
PYTHONUNBUFFERED=1 timeout 300 python3 .gpu/torch_anchors.py cuda 2>&1 | tee -a "$OUT/log.txt"
