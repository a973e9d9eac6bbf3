#!/usr/bin/env bash
# Times bench/probes/half_lanes.cl on the GPU machine (carry .gpu): the f16
# chain with 2, 4 and 8 elements a work-item, loads and stores through
# vload_half / PTX cvt, rounding in integers / PTX, and f16 copies; 2^26
# f16 elements, groups of 256, medians of 51. PTX of L=4 and L=8 builds in
# $OUT/half_lanes_L*.ptx.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
n=$((1 << 26))
for L in 2 4 8; do
  BINARY=$OUT/half_lanes_L$L.ptx LAUNCH="$((n / L)) 256 4 $((n * 2)) $n" RUNS=51 \
    /tmp/cki bench/probes/half_lanes.cl "-DL=$L -DPTX=1"
done | tee "$OUT/half_lanes.txt" | grep -E "^==|^kernel|^median|error"
