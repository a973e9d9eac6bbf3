#!/usr/bin/env bash
# The CPU GEMM's autotuned tiling against its default on the GPU machine's
# 16 cores (one call of the device tool; carry .gpu):
#     bash bench/cpu/gemm_tune_16.sh [rounds]
# bench_gemm's gemm_epilogue 1024^3 and mlp (PoCL on every core,
# CLFUSE_DEVICE=cpu, 20 runs), with the default CPU tiling and with
# --autotune (CLFUSE_LOGS=perf: each candidate's time and the one kept; a
# fresh cache each round, so each round tunes again), alternately; then
# torch eager and torch.compile on the same cores (bench/cpu/torch_cpu.py
# --cases gemm). Raw outputs in $OUT/r; a summary is printed.
set -uo pipefail
rounds=${1:-2}
source bench/cpu/common_16.sh
export POCL_CACHE_DIR=/tmp/pocl-cache-tune
for r in $(seq 1 "$rounds"); do
  for mode in default autotune; do
    flag=""
    [ $mode = autotune ] && flag=--autotune
    for c in gemm_epilogue mlp; do
      f="$R/tune_${c}_${mode}_$r.txt"
      CLFUSE_LOGS=perf CLFUSE_CACHE_DIR=/tmp/clfuse-cache-tune-$mode-$r timeout 240 $B/bench/bench_gemm \
        --only $c --runs 20 $flag > "$f" 2>&1
      grep -E "^$c " "$f" | cut -c1-100 | sed "s/^/$r $mode /"
      grep -E "autotune: .*kept" "$f" | cut -c1-140 | sed "s/^/    /"
    done
  done
done
echo "== torch ($((SECONDS - START)) s)"
timeout 150 python3 bench/cpu/torch_cpu.py --cases gemm --iters 50 --warmup 5 > "$R/torch.txt" 2>&1
tail -6 "$R/torch.txt"
echo "done in $((SECONDS - START)) s"
