#!/usr/bin/env bash
# Issue 17's correctness on the GPU machine (carry .gpu; run ../shared/gpu/prepare
# and bench/models/prepare_gpu.sh here first):
#     bash bench/run_attention_tests_gpu.sh
# Builds with tests, runs the attention, planner, gemm, fusion and codegen suites
# on the H200 through NVIDIA's OpenCL (CLFUSE_DEVICE=gpu: the GPU form of every
# kernel, and the CPU form where a test forces it). Writes $OUT/tests_gpu.txt
# and $OUT/log.txt; prints a summary. (The attention suite on PoCL with 16
# cores took over 150 s: it runs here and in CI instead.)
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=/tmp/build-gpu-tests
proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
[ -f "$proto" ] || proto=/usr/include/onnx/onnx.proto
if ! { meson setup $B -Dtests=true --buildtype=release --wrap-mode=nodownload -Donnx_proto=$proto &&
       ninja -C $B; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ clinfo -l; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > "$OUT/log.txt" 2>&1
echo "built in $SECONDS s"
CLFUSE_DEVICE=gpu timeout 300 meson test -C $B --suite attention --suite planner --suite gemm --suite fusion \
  --suite codegen --num-processes 8 --print-errorlogs > "$OUT/tests_gpu.txt" 2>&1
echo "== GPU ($SECONDS s)"
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
grep -E "^[^ ].*:[0-9]+:[EF]:|^  !!" "$OUT/tests_gpu.txt" | head -30
echo "done in $SECONDS s"
