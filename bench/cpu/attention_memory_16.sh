#!/usr/bin/env bash
# The CPU attention form and the memory-bound cases on the GPU machine's 16
# cores (one call of the device tool; carry .gpu and base-tree, made by
# `git archive <rev> | tar -x -C base-tree`):
#     BASE_TREE=base-tree bash bench/cpu/attention_memory_16.sh
# First bench/cpu/gemm_ab_16.sh 1 with QUICK=1 (one round of bench_gemm,
# DECODER_ROUNDS rounds of bench_decoder, this tree and the base
# alternately); then bench_attention (GQA B1 H32 HKV8 S512 D64 causal, f16
# and f32) both trees, two rounds; then this tree's bench_pointwise and
# bench_reductions and torch's memory-bound cases (eager, torch.compile) on
# the same cores (bench/cpu/torch_cpu.py --cases memory).
set -uo pipefail
START=$SECONDS
QUICK=1 DECODER_ROUNDS=${DECODER_ROUNDS:-2} bash bench/cpu/gemm_ab_16.sh 1 || exit 1
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
R=$OUT/r
export POCL_CACHE_DIR=/tmp/pocl-cache-ab PYTHONUNBUFFERED=1
B=/tmp/build-ab BB=/tmp/build-ab-base
args="--b 1 --h 32 --hkv 8 --s 512 --d 64 --causal"
for r in 1 2; do
  for t in head base; do
    b=$B; [ $t = base ] && b=$BB
    for dt in f16 f32; do
      CLFUSE_DEVICE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-att-$t timeout 120 $b/bench/bench_attention --dtype $dt $args \
        > "$R/att_${dt}_${t}_$r.txt" 2>&1
      echo "$r $t $dt $(grep -E '^fused: device' "$R/att_${dt}_${t}_$r.txt" | cut -c1-60) $(grep -oE 'check.*: (ok|FAIL.*)' "$R/att_${dt}_${t}_$r.txt" | tail -c 4)"
    done
  done
done
echo "== memory-bound ($((SECONDS - START)) s)"
export CLFUSE_DEVICE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-mem
timeout 150 $B/bench/bench_pointwise --runs 20 > "$R/pointwise.txt" 2>&1
timeout 200 $B/bench/bench_reductions --runs 20 > "$R/reductions.txt" 2>&1
grep -hE "^copy roofline|^[a-z_0-9]+ +[0-9]+/[0-9]+ " "$R/pointwise.txt" "$R/reductions.txt" | cut -c1-150
timeout 200 python3 bench/cpu/torch_cpu.py --cases memory --iters 20 --warmup 3 > "$R/torch_memory.txt" 2>&1
tail -n 12 "$R/torch_memory.txt"
echo "done in $((SECONDS - START)) s"
