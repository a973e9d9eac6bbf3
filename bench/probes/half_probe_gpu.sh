#!/usr/bin/env bash
# Times bench/probes/half_probe.cl (the f16 chain written four ways, an f16
# copy and an f32 chain moving the same bytes) on the GPU machine: 2^26 f16
# elements, eight a work-item. Carry .gpu.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
n=$((1 << 26))
LAUNCH="$((n / 8)) 256 4 $((n * 2)) $n" RUNS=51 /tmp/cki bench/probes/half_probe.cl "" | tee "$OUT/half_probe.txt"
