#!/usr/bin/env bash
# How each kernel of a decoder layer scales with PoCL's worker threads on the
# GPU machine's cores (one call of the device tool; carry .gpu):
#     bash bench/cpu/decoder_threads.sh [threads...]   (default 1 2 4 8 16)
# bench_decoder (Llama-3.2-1B shapes, one layer, f16, 3 runs) with
# POCL_MAX_PTHREAD_COUNT set to each count (PoCL reads it at start-up; it
# sets the compute units PoCL reports too, so codegen's blocking follows);
# the per-kernel table of the 512-row prefill and a decode step for each.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
R=$OUT/threads
mkdir -p "$R"
B=/tmp/build-ab
opts="--buildtype=release --wrap-mode=nodownload -Dtests=false -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
{ [ -f $B/build.ninja ] || meson setup $B $opts; ninja -C $B bench/bench_decoder; } > "$R/build.log" 2>&1 ||
  { tail -20 "$R/build.log"; exit 1; }
clinfo 2>/dev/null | grep -E "Platform Version|Device Name|Max compute units" > "$R/env.txt"
cat "$R/env.txt"
for t in ${@:-1 2 4 8 16}; do
  POCL_MAX_PTHREAD_COUNT=$t CLFUSE_DEVICE=cpu POCL_CACHE_DIR=/tmp/pocl-cache-thr CLFUSE_CACHE_DIR=/tmp/clfuse-cache-thr-$t \
    timeout 200 $B/bench/bench_decoder --layers 1 --dtype f16 --runs 3 > "$R/dec_$t.txt" 2>&1
  echo "== threads $t"
  grep -E "^prefill|^decode L=128 |ms  clf_" "$R/dec_$t.txt" | head -11
done
