#!/usr/bin/env bash
# Rows a work-item in the CPU reduction form (ROWS_PER_ITEM, the schedule's
# rows_per_item) on the GPU machine's 16 cores (one call of the device
# tool; carry .gpu):
#     bash bench/cpu/softmax_rows_16.sh [rounds]
# softmax_short's kernel (16384 x 256, f32; bench/probes/kernel_source.c
# STYLE=cpu) timed alone by bench/probes/cl_kernel_info at 1, 2, 4, 8, 16
# and 32 rows a work-item, the variants alternating within each round
# (30 runs each, the median); then bench_reductions (the rows a work-item
# this tree's schedule chooses) and torch eager and torch.compile on the
# same cores (bench/cpu/torch_cpu.py --cases memory). Raw outputs in $OUT/r.
set -uo pipefail
rounds=${1:-3}
source bench/cpu/common_16.sh
export POCL_CACHE_DIR=/tmp/pocl-cache-rows
gcc -O2 -std=c11 -Iinclude -o /tmp/ks bench/probes/kernel_source.c -L$B -lclfuse -Wl,-rpath,$B &&
  gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
rows=16384 cols=256
STYLE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-rows /tmp/ks softmax $rows $cols > "$R/softmax_short.cl" || exit 1
grep -E "^#define (ROWS_PER_ITEM|VEC|ACCS) " "$R/softmax_short.cl" | tr '\n' ' '; echo
for r in $(seq 1 "$rounds"); do
  for rpi in 1 2 4 8 16 32; do
    sed -E "s/^#define ROWS_PER_ITEM [0-9]+u/#define ROWS_PER_ITEM ${rpi}u/" "$R/softmax_short.cl" > /tmp/ss_$rpi.cl
    echo "$r rows/item $rpi: $(PROBE_DEVICE=cpu LAUNCH="$((rows / rpi)) 1 2 $((rows * cols * 4)) $rows" RUNS=30 \
      timeout 60 /tmp/cki /tmp/ss_$rpi.cl 2>&1 | grep -E 'median' | tr '\n' ' ')"
  done
done
echo "== bench_reductions ($((SECONDS - START)) s)"
CLFUSE_CACHE_DIR=/tmp/clfuse-cache-rows-bench timeout 200 $B/bench/bench_reductions --runs 20 > "$R/reductions.txt" 2>&1
grep -hE "^copy roofline|^[a-z_0-9]+ +[0-9]+x[0-9]+ " "$R/reductions.txt" | cut -c1-110
echo "== torch ($((SECONDS - START)) s)"
timeout 200 python3 bench/cpu/torch_cpu.py --cases memory --iters 20 --warmup 3 > "$R/torch_memory.txt" 2>&1
tail -n 12 "$R/torch_memory.txt"
echo "done in $((SECONDS - START)) s"
