#!/usr/bin/env bash
# The tensor-core attention form (attention_mma.cl) under each tiling listed
# (CLFUSE_ATTENTION_TILE=warps,rows,keys; "default" the schedule's own) and
# each set of build options in SWEEP_BUILDS ("|"-separated, "none" for
# none; the default), then PyTorch's SDPA on the same cases, in one call on the GPU
# machine (carry .gpu):
#     B=/tmp/build-gpu-tests bash bench/attention_tile_sweep_gpu.sh [TILE ...]
# B: a build with bench/bench_attention (built here if absent). SWEEP_CASES
# picks cases by name (an extended regular expression; the f32 cases take
# the portable GPU form, whatever the tiling), SWEEP_ITERS the
# runs a configuration (30); SWEEP_TORCH=0 leaves torch out. Prints a line
# a configuration (median, min ms; the check's relative norm error), the
# torch lines last; logs under $OUT/sweep.
set -uo pipefail
START=$SECONDS
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT/sweep"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-sweep-cache PYTHONUNBUFFERED=1
B=${B:-/tmp/build-gpu}
proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
[ -f "$proto" ] || proto=/usr/include/onnx/onnx.proto
if ! { { [ -f $B/build.ninja ] || meson setup $B -Dtests=false --buildtype=release --wrap-mode=nodownload \
         -Donnx_proto=$proto; } && ninja -C $B bench/bench_attention; } > "$OUT/sweep/build.log" 2>&1; then
  tail -30 "$OUT/sweep/build.log"; exit 1
fi
echo "built in $((SECONDS - START)) s"
tiles=("$@")
[ ${#tiles[@]} -eq 0 ] && tiles=(default 8,16,64 4,32,32 4,32,64 8,32,32 2,32,64)
iters=${SWEEP_ITERS:-30}
cases=$(cat <<'EOF'
f16_full	--dtype f16 --b 8 --h 16 --s 1024 --d 64
f16_causal	--dtype f16 --b 8 --h 16 --s 1024 --d 64 --causal
f16_d128_causal	--dtype f16 --b 4 --h 32 --s 1024 --d 128 --causal
f32_full	--dtype f32 --b 8 --h 16 --s 1024 --d 64
f32_causal	--dtype f32 --b 8 --h 16 --s 1024 --d 64 --causal
EOF
)
while IFS=$'\t' read -r name opts; do
  [[ $name =~ ${SWEEP_CASES:-.} ]] || continue
  IFS='|' read -r -a builds <<< "${SWEEP_BUILDS:-none}"
  for vt in "${builds[@]}"; do
    for tile in "${tiles[@]}"; do
      # (file names of letters, digits and _: the device tool returns no others)
      log="$OUT/sweep/${name}_${tile//,/_}_${vt//[^A-Za-z0-9_]/}.txt"
      env_tile=(); [ "$tile" != default ] && env_tile=(CLFUSE_ATTENTION_TILE=$tile)
      bo=(); [ "$vt" != none ] && bo=("CLFUSE_BUILD_OPTIONS=$vt")
      # shellcheck disable=SC2086  # opts are words
      env "${env_tile[@]}" "${bo[@]}" CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_attention $opts --iters $iters \
        --warmup 5 > "$log" 2>&1 < /dev/null
      rc=$?
      med=$(grep -o "median_ms=[0-9.]*" "$log" | head -1 | cut -d= -f2)
      mn=$(grep -o "min_ms=[0-9.]*" "$log" | head -1 | cut -d= -f2)
      ok=$(grep -o "ok=[01]" "$log" | head -1)
      err=$(grep -o "relative norm error [0-9.e+-]*" "$log" | head -1 | awk '{print $4}')
      printf '%-16s %-9s %-13s rc=%s %s median %s min %s normerr %s\n' "$name" "$tile" "$vt" "$rc" "$ok" "$med" "$mn" "$err"
    done
  done
done <<< "$cases"
echo "sweep done in $((SECONDS - START)) s"
[ "${SWEEP_TORCH:-1}" = 1 ] || exit 0
targs=()
while IFS=$'\t' read -r name opts; do
  [[ $name =~ ${SWEEP_CASES:-.} ]] && targs+=(--case "$name" "$opts")
done <<< "$cases"
timeout 200 python3 bench/attention/torch_attention.py --iters 50 --warmup 10 "${targs[@]}" > "$OUT/sweep/torch.log" 2>&1
echo "torch exit $? ($((SECONDS - START)) s)"
grep -E "^(==|sdpa|compile)" "$OUT/sweep/torch.log" | grep -v "CUDA kernels"
