#!/usr/bin/env bash
# The KV cache and the decoder stack on the GPU machine, through the device
# tool (carry .gpu, filled by ../shared/gpu/prepare and then
# bench/models/prepare_gpu.sh; see shared BENCH.md).
#     bash bench/run_decoder_gpu.sh tests   the driver's extensions
#                                           (bench/probes/device_extensions.c), then
#                                           the kv_cache, dynamic, attention,
#                                           memory and quirks suites on the H200
#     bash bench/run_decoder_gpu.sh bench   bench_decoder (f16, 2 layers) and
#                                           .gpu/llm_anchors.py (a copy of ../shared/gpu/llm_anchors.py; ../shared does not travel) in
#                                           the same call
#     bash bench/run_decoder_gpu.sh ablate  bench_decoder with and without the
#                                           tensor-core GEMM form
#     bash bench/run_decoder_gpu.sh rows    the gemm and half suites (ROWS_SUITES), then
#                                           bench_decoder with the few-rows GEMM
#                                           form (the default) and without it
#                                           (CLFUSE_GEMM_ROWS 1, 0);
#                                           where a step's time goes:
#                                           bench/probes/decode_step_gpu.sh
#     bash bench/run_decoder_gpu.sh merge   bench_decoder with products that read one
#                                           operand merged (q/k/v, gate/up; the default)
#                                           and apart (CLFUSE_MERGE_PRODUCTS 1, 0), then
#                                           .gpu/llm_anchors.py, one call (NO_ANCHORS=1: not it)
#     bash bench/run_decoder_gpu.sh tiles   bench_decoder's prefill with each
#                                           tensor-core tiling of TILES pinned
#                                           (CLFUSE_GEMM_TILE; "default": none),
#                                           its GEMMs' times per tiling
# Results in $OUT.
set -uo pipefail
source bench/gpu_build.sh
# bench_decoder (2 layers, f16) with the switch $1 at each of the values
# after $2 (default 1 and 0), one call; results in
# $OUT/decoder_gpu_f16_$2<value>.md (from the third value on, _<i> after it).
decoder_with_and_without() {
  local switch=$1 tag=$2
  shift 2
  local i=0 f
  for on in ${@:-1 0}; do
    i=$((i + 1)); f="$OUT/decoder_gpu_f16_$tag$on.md"; [ $i -gt 2 ] && f="$OUT/decoder_gpu_f16_$tag${on}_$i.md"
    env CLFUSE_DEVICE=gpu "$switch=$on" timeout 200 $B/bench/bench_decoder --layers 2 --runs 30 --markdown \
      > "$f" 2>&1
    echo "== $switch=$on"; grep -vE "^ +[0-9.]+ ms  clf_" "$f"
  done
}
case "${1:-bench}" in
tests)
  # The driver's extensions first (command buffers: a decode step recorded
  # once and replayed, as CUDA graphs are).
  gcc -O2 -std=c11 -o /tmp/devext bench/probes/device_extensions.c -lOpenCL &&
    /tmp/devext > "$OUT/device_extensions.txt" 2>&1; tail -1 "$OUT/device_extensions.txt"
  CLFUSE_DEVICE=gpu timeout 420 meson test -C $B --suite kv_cache --suite dynamic --suite attention \
    --suite memory --suite quirks --num-processes 8 --print-errorlogs > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
  ;;
bench)
  # The figures without logs (CLFUSE_LOGS=schedule reads no plan cache and
  # prints while it plans: a new length's cost doubled), then the schedules
  # and the specialisations' host times from a logged run.
  CLFUSE_DEVICE=gpu timeout 200 $B/bench/bench_decoder --layers 2 --markdown > "$OUT/decoder_gpu_f16.md" 2>&1
  cat "$OUT/decoder_gpu_f16.md"
  CLFUSE_DEVICE=gpu CLFUSE_LOGS=schedule,cache timeout 200 $B/bench/bench_decoder --layers 2 --runs 5 --markdown \
    > "$OUT/decoder_gpu_f16_logged.md" 2> "$OUT/decoder_gpu_f16_log.txt"
  grep -E "attention|specialisation planned" "$OUT/decoder_gpu_f16_log.txt" | sort | uniq -c | sort -rn | head -12
  timeout 280 python3 .gpu/llm_anchors.py > "$OUT/llm_anchors.txt" 2>&1
  tail -20 "$OUT/llm_anchors.txt"
  ;;
lengths)
  # Which programs each decode length runs (CLFUSE_LOGS=cache) and its
  # kernels' times (bench_decoder prints them for every decode case).
  CLFUSE_DEVICE=gpu CLFUSE_LOGS=cache timeout 200 $B/bench/bench_decoder --layers 2 --runs 30 --markdown \
    > "$OUT/decoder_gpu_f16_lengths.md" 2> "$OUT/decoder_gpu_f16_lengths_log.txt"
  grep -E "attention|^\||decode" "$OUT/decoder_gpu_f16_lengths.md"
  grep -E "symbolic sizes|generic program|a kernel form" "$OUT/decoder_gpu_f16_lengths_log.txt" | tail -40
  ;;
merge)
  decoder_with_and_without CLFUSE_MERGE_PRODUCTS merge 1 0 1
  [ -n "${NO_ANCHORS:-}" ] && exit 0
  timeout 280 python3 .gpu/llm_anchors.py > "$OUT/llm_anchors.txt" 2>&1
  tail -20 "$OUT/llm_anchors.txt"
  ;;
ablate)
  # The decode GEMMs (M = 1): the tensor-core tile form against the
  # portable one (CLFUSE_TENSOR_CORES=0), same call.
  decoder_with_and_without CLFUSE_TENSOR_CORES tc
  ;;
rows)
  suites=""; for s in ${ROWS_SUITES:-gemm half}; do suites+=" --suite $s"; done
  CLFUSE_DEVICE=gpu timeout ${ROWS_TEST_TIMEOUT:-240} meson test -C $B $suites --num-processes 8 --print-errorlogs \
    > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
  decoder_with_and_without CLFUSE_GEMM_ROWS rows 1 0
  ;;
tiles)
  i=0
  for t in ${TILES:-default 128,128,32,64,64,mma 128,128,32,32,64,mma 64,128,32,32,64,mma 128,64,32,64,32,mma 64,64,32,32,32,mma default}; do
    pin=$t; [ "$t" = default ] && pin=
    i=$((i + 1)); f="$OUT/tiles_${i}_$(echo "$t" | tr , -).md" # (the device tool refuses commas in names)
    CLFUSE_DEVICE=gpu CLFUSE_GEMM_TILE=$pin timeout 150 $B/bench/bench_decoder --layers 2 --runs 10 --markdown \
      > "$f" 2>&1
    echo "== $t: $(grep -E '^\| prefill' "$f")"
    awk '/per kernel at prefill/,/per kernel at decode L=128/' "$f" | grep gemm | tr -s ' ' | tr '\n' ';'
    echo
  done
  ;;
esac
