#!/usr/bin/env bash
# Why one core of the GPU machine (PoCL 5, cpu-skylake-avx512) runs the
# CPU attention form slower than this development machine's (PoCL 3.1):
# bench_attention (GQA B1 H32 HKV8 S512 D64 causal, f32 and f16) with
# PoCL's workers at 1 and 16, then what PoCL compiled: the attention
# kernel's shared object's local-size directory and its instruction counts
# (objdump), beside bench_decoder's per-kernel table on one thread.
# One call of the device tool (carry .gpu):
#     bash bench/probes/cpu_attention_core.sh
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
R=$OUT/attcore
mkdir -p "$R"
B=/tmp/build-attcore
opts="--buildtype=release --wrap-mode=nodownload -Dtests=false -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
{ [ -f $B/build.ninja ] || meson setup $B $opts; ninja -C $B bench/bench_attention bench/bench_decoder; } > "$R/build.log" 2>&1 ||
  { tail -20 "$R/build.log"; exit 1; }
args="--b 1 --h 32 --hkv 8 --s 512 --d 64 --causal"
for dt in f32 f16; do
  for t in 1 16; do
    rm -rf /tmp/pc-att; mkdir -p /tmp/pc-att
    POCL_MAX_PTHREAD_COUNT=$t CLFUSE_DEVICE=cpu POCL_CACHE_DIR=/tmp/pc-att CLFUSE_CACHE_DIR=/tmp/cc-att-$dt-$t \
      timeout 120 $B/bench/bench_attention --dtype $dt $args > "$R/att_${dt}_$t.txt" 2>&1
    echo "== $dt threads $t: $(grep -E '^fused: device' "$R/att_${dt}_$t.txt")"
  done
  so=$(find /tmp/pc-att -name 'clf_attention*.so' | grep -v '/0-0-0/' | head -1)
  echo "   $so"
  objdump -d --no-show-raw-insn "$so" > "$R/att_${dt}.s" 2>&1
  echo "   $(wc -l < "$R/att_${dt}.s") lines; zmm $(grep -c zmm "$R/att_${dt}.s") ymm $(grep -c ymm "$R/att_${dt}.s") xmm $(grep -c xmm "$R/att_${dt}.s") calls $(grep -c 'call' "$R/att_${dt}.s")"
  awk '{print $2}' "$R/att_${dt}.s" | sort | uniq -c | sort -rn | head -24 | tr '\n' ' '; echo
  grep 'call' "$R/att_${dt}.s" | awk '{print $NF}' | sort | uniq -c | sort -rn | head -8
done
POCL_MAX_PTHREAD_COUNT=1 CLFUSE_DEVICE=cpu POCL_CACHE_DIR=/tmp/pc-dec CLFUSE_CACHE_DIR=/tmp/cc-dec \
  timeout 200 $B/bench/bench_decoder --layers 1 --dtype f16 --runs 2 > "$R/dec_1.txt" 2>&1
echo "== decoder, one thread"; grep -E "^prefill|ms  clf_" "$R/dec_1.txt" | head -10
