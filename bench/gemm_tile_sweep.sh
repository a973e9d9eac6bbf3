#!/usr/bin/env bash
# Times bench_gemm's gemm_epilogue under each GEMM tiling listed (by hand,
# what --autotune does at compile time), on the default device.
#     bench/gemm_tile_sweep.sh BUILDDIR [tm,tn,tk,wm,wn ...]
set -uo pipefail
b=$1; shift
tiles=("$@")
if [ ${#tiles[@]} -eq 0 ]; then
  tiles=(128,128,8,16,8 128,128,16,8,8 128,128,8,8,8 64,64,16,4,4 128,64,16,8,4 64,128,16,4,8 128,128,16,8,4 128,128,16,4,8 64,64,8,4,4)
fi
for t in "${tiles[@]}"; do
  printf '%-16s ' "$t"
  CLFUSE_GEMM_TILE=$t "$b/bench/bench_gemm" --only gemm_epilogue --runs 10 2>&1 | grep -E "^gemm_epilogue|error|wrong" | head -2
done
