#!/usr/bin/env bash
# Symbolic sizes on the GPU machine, through the device tool (carry .gpu;
# see shared BENCH.md): the dynamic and gemm suites on the H200 through
# NVIDIA's OpenCL (the generic programs with lifted literals must build
# there too), then bench_dynamic on the GPU and on PoCL there.
#     bash bench/run_dynamic_gpu.sh        results in $OUT
set -uo pipefail
source bench/gpu_build.sh
CLFUSE_DEVICE=gpu timeout 240 meson test -C $B --suite dynamic --suite gemm --num-processes 8 --print-errorlogs \
  > "$OUT/tests_gpu.txt" 2>&1
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
for w in 512 2048; do
  CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_dynamic $w --markdown > "$OUT/dynamic_gpu_$w.md" 2>&1
  cat "$OUT/dynamic_gpu_$w.md"
done
CLFUSE_DEVICE=cpu timeout 150 $B/bench/bench_dynamic 512 --markdown > "$OUT/dynamic_pocl_512.md" 2>&1
cat "$OUT/dynamic_pocl_512.md"
