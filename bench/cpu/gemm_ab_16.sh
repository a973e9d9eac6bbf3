#!/usr/bin/env bash
# A/B of the CPU GEMM form on the GPU machine's cores (one call of the
# device tool; carry .gpu; BASE_TREE=base-tree made by
# `git archive <rev> | tar -x -C base-tree`):
#     BASE_TREE=base-tree bash bench/cpu/gemm_ab_16.sh [rounds]
# (DECODER_ROUNDS: bench_decoder rounds, default 2; QUICK=1 stops after
# them, without torch, the fixtures or onnxruntime.)
# This tree and the base alternately, PoCL on every core
# (CLFUSE_DEVICE=cpu): bench_gemm's gemm_epilogue 1024^3 and mlp (default
# CPU tiling, 20 runs), bench_decoder (Llama-3.2-1B shapes, one layer, f16,
# 3 runs: a 512-row prefill and decode steps, per kernel); then torch eager
# and torch.compile on the same cores (bench/cpu/torch_cpu.py --cases gemm)
# and the tiny TorchScript fixtures (`clfuse bench --fused-only`, both
# trees) against onnxruntime (bench/models/bench_models.py --no-torch).
# Everything lands in $OUT/r (raw) and a summary is printed.
set -uo pipefail
START=$SECONDS
source .gpu/env.sh
rounds=${1:-3}
OUT=${OUT:-/tmp/clfuse-out}
R=$OUT/r
mkdir -p "$R"
export POCL_CACHE_DIR=/tmp/pocl-cache-ab PYTHONUNBUFFERED=1
B=/tmp/build-ab BB=/tmp/build-ab-base
opts="--buildtype=release --wrap-mode=nodownload -Dtests=false -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
{ [ -f $B/build.ninja ] || meson setup $B $opts; } > "$R/build.log" 2>&1
{ [ -f $BB/build.ninja ] || (cd "$BASE_TREE" && meson setup $BB $opts); } > "$R/build_base.log" 2>&1
ninja -C $B >> "$R/build.log" 2>&1 & ninja -C $BB >> "$R/build_base.log" 2>&1 & wait
[ -x $B/bench/bench_gemm ] && [ -x $BB/bench/bench_gemm ] || { tail -20 "$R"/build*.log; exit 1; }
{ date -u; git log -1 --oneline 2>/dev/null; nproc; lscpu | grep -E "^(Model name|CPU max MHz|L2|L3)"
  clinfo 2>/dev/null | grep -E "Platform (Name|Version)|Device Name|Driver Version"; } > "$R/env.txt" 2>&1
cat "$R/env.txt"
echo "built in $((SECONDS - START)) s"
tree() { [ "$1" = head ] && echo $B || echo $BB; }
for r in $(seq 1 "$rounds"); do
  for t in head base; do
    for c in gemm_epilogue mlp; do
      CLFUSE_DEVICE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-ab-$t timeout 120 $(tree $t)/bench/bench_gemm \
        --only $c --runs 20 > "$R/gemm_${c}_${t}_$r.txt" 2>&1
      grep -E "^$c " "$R/gemm_${c}_${t}_$r.txt" | cut -c1-110 | sed "s/^/$r $t /"
    done
  done
done
for r in $(seq 1 "${DECODER_ROUNDS:-2}"); do
  for t in head base; do
    CLFUSE_DEVICE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-ab-dec-$t timeout 150 $(tree $t)/bench/bench_decoder \
      --layers 1 --dtype f16 --runs 3 > "$R/dec_${t}_$r.txt" 2>&1
    echo "== decoder $t $r ($((SECONDS - START)) s)"
    grep -E "self-check|^prefill|^decode|clf_gemm" "$R/dec_${t}_$r.txt" | head -12
  done
done
[ "${QUICK:-0}" = 1 ] && { echo "done in $((SECONDS - START)) s (QUICK: no references)"; exit 0; }
echo "== torch ($((SECONDS - START)) s)"
timeout 150 python3 bench/cpu/torch_cpu.py --cases gemm --iters 50 --warmup 5 > "$R/torch.txt" 2>&1
cat "$R/torch.txt" | tail -8
echo "== fixtures ($((SECONDS - START)) s)"
for t in head base; do
  for m in llama gpt2 bert; do
    CLFUSE_DEVICE=cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-ab-$t timeout 60 $(tree $t)/tools/clfuse/clfuse bench \
      tests/models/${m}_torchscript_ids/model.onnx --runs 300 --fused-only > "$R/fix_${m}_$t.txt" 2>&1
    grep -E '^fused ' "$R/fix_${m}_$t.txt" | sed "s/^/$t $m /"
  done
done
timeout 100 python3 bench/models/bench_models.py --no-torch > "$R/refs.jsonl" 2> "$R/refs.log"
cut -c1-160 "$R/refs.jsonl"
echo "done in $((SECONDS - START)) s"
