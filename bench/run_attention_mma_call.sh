#!/usr/bin/env bash
# One device call for the tensor-core attention form's tilings and the
# decode form (carry .gpu): the attention suite on NVIDIA's driver (its
# cases in parallel, bench/run_cases_gpu.sh; builds with tests), the tiling
# sweep (bench/attention_tile_sweep_gpu.sh) with SDPA in the same call, and
# the decode cases of bench/run_attention_gpu.sh against SDPA.
#     bash bench/run_attention_mma_call.sh [TILE ...]
# CALL_CASES=0 leaves the suite out; SWEEP_CASES, SWEEP_BUILDS as the sweep's;
# SWEEP2_CASES, SWEEP2_TILES, SWEEP2_BUILDS a second sweep; CALL_REGS
# tilings whose ptxas register report to print (under each set of build
# options of CALL_REGS_BUILDS); CALL_DECODE=0 leaves the
# decode cases out, DECODE_CHUNKS, DECODE_BUILDS and DECODE_NARROW as below.
set -uo pipefail
export B=${B:-/tmp/build-gpu-tests}
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
if [ "${CALL_CASES:-1}" = 1 ]; then
  CASE_TIMEOUT=200 timeout 300 bash bench/run_cases_gpu.sh attention > "$OUT/cases.txt" 2>&1
  grep -v "^ok " "$OUT/cases.txt" | tail -15
fi
SWEEP_CASES=${SWEEP_CASES:-'f16_full|f16_causal'} SWEEP_ITERS=${SWEEP_ITERS:-20} timeout ${SWEEP_TIMEOUT:-260} \
  bash bench/attention_tile_sweep_gpu.sh "$@" 2>&1 | tail -45
if [ -n "${SWEEP2_CASES:-}" ]; then
  # A second sweep (other cases, tiles SWEEP2_TILES, builds SWEEP2_BUILDS).
  # shellcheck disable=SC2086  # tiles are words
  SWEEP_CASES=$SWEEP2_CASES SWEEP_BUILDS=${SWEEP2_BUILDS:-none} SWEEP_ITERS=${SWEEP_ITERS:-20} \
    timeout ${SWEEP_TIMEOUT:-260} bash bench/attention_tile_sweep_gpu.sh ${SWEEP2_TILES:-default} 2>&1 | tail -45
fi
if [ -n "${CALL_REGS:-}" ]; then
  # NVIDIA's register report (ptxas: registers, spills, local memory) of
  # the f16 B8 H16 S1024 D64 kernel under each tiling of CALL_REGS and each
  # set of build options of CALL_REGS_BUILDS ("|"-separated, "none" for none).
  IFS='|' read -r -a rbuilds <<< "${CALL_REGS_BUILDS:-none}"
  for tile in $CALL_REGS; do
    for vt in "${rbuilds[@]}"; do
      env_tile=(); [ "$tile" != default ] && env_tile=(CLFUSE_ATTENTION_TILE=$tile)
      opts=-cl-nv-verbose; [ "$vt" != none ] && opts="$opts $vt"
      f="$OUT/regs_${tile//,/_}_${vt//[^A-Za-z0-9_]/}.txt"
      env "${env_tile[@]}" "CLFUSE_BUILD_OPTIONS=$opts" CLFUSE_LOGS=perf CLFUSE_CACHE_DIR=/tmp/clfuse-regs-cache \
        CLFUSE_DEVICE=gpu timeout 60 $B/bench/bench_attention --dtype f16 --b 8 --h 16 --s 1024 --d 64 --iters 2 \
        --warmup 1 > "$f" 2>&1
      echo "registers, tiling $tile, build $vt: $(grep -iE 'registers|spill|stack|bytes lmem' "$f" | sort -u |
        head -4 | tr '\n' ' ')"
    done
  done
fi
[ "${CALL_DECODE:-1}" = 1 ] || exit 0
dec1="--dtype f16 --b 1 --h 32 --sq 1 --sk 4096 --d 128"
dec8="--dtype f16 --b 8 --h 32 --sq 1 --sk 4096 --d 128"
# The decode form under each chunk of DECODE_CHUNKS (CLFUSE_DECODE_CHUNK,
# keys a chunk; "default" the schedule's) and each set of build options of
# DECODE_BUILDS ("|"-separated, "none" for none), with 16-byte loads
# (CLFUSE_DECODE_WIDE=1, the default where K and V lie as they are) and,
# where DECODE_NARROW=1, a value a load (0); two rounds each.
IFS='|' read -r -a dbuilds <<< "${DECODE_BUILDS:-none}"
for c in "$dec1" "$dec8"; do
  for chunk in ${DECODE_CHUNKS:-default}; do
    for round in 1 2; do
      for vt in "${dbuilds[@]}"; do
        for wide in 1 $([ "${DECODE_NARROW:-1}" = 1 ] && echo 0); do
          # (file names of letters, digits and _: the device tool returns no others)
          f="$OUT/decode_${wide}_${chunk}_${vt//[^A-Za-z0-9_]/}_$round.txt"
          env_chunk=(); [ "$chunk" != default ] && env_chunk=(CLFUSE_DECODE_CHUNK=$chunk)
          bo=(); [ "$vt" != none ] && bo=("CLFUSE_BUILD_OPTIONS=$vt")
          # shellcheck disable=SC2086  # options are words
          env "${env_chunk[@]}" "${bo[@]}" CLFUSE_DECODE_WIDE=$wide CLFUSE_DEVICE=gpu CLFUSE_LOGS=schedule \
            timeout 60 $B/bench/bench_attention $c --iters 50 --warmup 5 > "$f" 2>&1
          echo "decode wide=$wide chunk=$chunk build=$vt round $round $c: $(grep -o 'split=[0-9]*' "$f" | head -1) \
$(grep -o 'median_ms=[0-9.]* min_ms=[0-9.]*' "$f" | head -1) $(grep -o 'ok=[01]' "$f" | head -1)"
        done
      done
    done
  done
done
timeout 120 python3 bench/attention/torch_attention.py --iters 50 --warmup 10 --case decode_f16_b1 "$dec1" \
  --case decode_f16_b8 "$dec8" > "$OUT/torch_decode.log" 2>&1
grep -E "^(sdpa|compile)|RESULT" "$OUT/torch_decode.log" | grep -v "CUDA kernels"
