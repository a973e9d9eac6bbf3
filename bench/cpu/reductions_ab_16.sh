#!/usr/bin/env bash
# The CPU reduction form against a base on the GPU machine's 16 cores (one
# call of the device tool; carry .gpu and base-tree, made by
# `git archive <rev> | tar -x -C base-tree`):
#     BASE_TREE=base-tree bash bench/cpu/reductions_ab_16.sh
# Builds both trees through bench/cpu/gemm_ab_16.sh (nothing else of it);
# then bench_reductions, this tree and the base; torch's memory-bound cases
# (eager, torch.compile) on the same cores (bench/cpu/torch_cpu.py --cases
# memory); softmax_short's kernel of each tree timed alone by
# bench/probes/cl_kernel_info, with 1, 4 and 16 rows a work-item
# (ROWS_PER_ITEM); bench_reductions again; and bench_decoder once a tree
# (its pointwise and reduction kernels: rotary embeddings, norms). The
# references come early, so that a call cut short still has them. Raw
# outputs in $OUT/r.
set -uo pipefail
START=$SECONDS
QUICK=1 DECODER_ROUNDS=0 bash bench/cpu/gemm_ab_16.sh 0 || exit 1
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
R=$OUT/r
export POCL_CACHE_DIR=/tmp/pocl-cache-ab PYTHONUNBUFFERED=1 CLFUSE_DEVICE=cpu
B=/tmp/build-ab BB=/tmp/build-ab-base
tree() { [ "$1" = head ] && echo $B || echo $BB; }
reductions() {
  for t in head base; do
    CLFUSE_CACHE_DIR=/tmp/clfuse-cache-red-$t timeout 200 $(tree $t)/bench/bench_reductions --runs 20 \
      > "$R/red_${t}_$1.txt" 2>&1
    echo "== reductions $t $1 ($((SECONDS - START)) s)"
    grep -hE "^copy roofline|^[a-z_0-9]+ +[0-9]+x[0-9]+ " "$R/red_${t}_$1.txt" | cut -c1-110
  done
}
reductions 1
echo "== torch ($((SECONDS - START)) s)"
timeout 200 python3 bench/cpu/torch_cpu.py --cases memory --iters 20 --warmup 3 > "$R/torch_memory.txt" 2>&1
tail -n 12 "$R/torch_memory.txt"
echo "== softmax_short's kernel alone ($((SECONDS - START)) s)"
gcc -O2 -std=c11 -Iinclude -o /tmp/ks-head bench/probes/kernel_source.c -L$B -lclfuse -Wl,-rpath,$B &&
  gcc -O2 -std=c11 -Iinclude -o /tmp/ks-base bench/probes/kernel_source.c -L$BB -lclfuse -Wl,-rpath,$BB &&
  gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
for t in head base; do
  STYLE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-ks-$t /tmp/ks-$t softmax 16384 256 > "$R/softmax_short_$t.cl" || exit 1
  for rpi in 1 4 16; do
    sed "s/^#define ROWS_PER_ITEM 1u/#define ROWS_PER_ITEM ${rpi}u/" "$R/softmax_short_$t.cl" > /tmp/ss_${t}_$rpi.cl
    echo "$t rows/item $rpi: $(PROBE_DEVICE=cpu LAUNCH="$((16384 / rpi)) 1 2 16777216 16384" RUNS=30 timeout 60 /tmp/cki /tmp/ss_${t}_$rpi.cl \
      2>&1 | grep -E 'median|enqueue -|build -' | tr '\n' ' ')"
  done
done
reductions 2
for t in head base; do
  CLFUSE_CACHE_DIR=/tmp/clfuse-cache-ab-dec-$t timeout 150 $(tree $t)/bench/bench_decoder --layers 1 --dtype f16 --runs 3 \
    > "$R/dec_${t}.txt" 2>&1
  echo "== decoder $t ($((SECONDS - START)) s)"
  grep -E "self-check|^prefill|^decode L=128|clf_poi|clf_red" "$R/dec_${t}.txt" | head -12
done
echo "done in $((SECONDS - START)) s"
