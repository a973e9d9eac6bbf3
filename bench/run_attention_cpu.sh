#!/usr/bin/env bash
# Fused attention on the CPU, softmax(q kT scale + mask) v: libclfuse
# (bench/bench_attention on PoCL, CLFUSE_DEVICE=cpu) against PyTorch's SDPA and
# torch.compile of the same graph on the same CPU (bench/attention/torch_attention.py
# --device cpu), in one call. On the GPU machine (16 cores, PoCL, torch) carry .gpu
# (../shared/gpu/prepare) for the OpenCL loader and headers:
#     bash bench/run_attention_cpu.sh quick    # 20 libclfuse runs, 20 torch calls a case
#     bash bench/run_attention_cpu.sh final    # 100 and 100
# Writes $OUT/attention_cpu.md (the table, printed last) and the raw logs beside it
# (clfuse.log, torch.log, build.log, env.txt). Every step has a timeout inside a
# budget of ATTN_BUDGET_S seconds (default 540); a case that fails, times out or
# is skipped for time is recorded as such in the table, never stopping the rest;
# without torch (python3 -c 'import torch' fails) the torch columns say so.
# Elsewhere: ATTN_CASES a cases file (name, bench_attention options, the torch case
# it is compared with, tab-separated), ATTN_BUILD the build folder (default
# /tmp/build-cpu; an existing one is reused), ATTN_THREADS the threads of both
# sides (PoCL's POCL_MAX_PTHREAD_COUNT and torch's set_num_threads through
# OMP_NUM_THREADS; default: each its own, every core).
set -uo pipefail
START=$SECONDS
mode=${1:-quick}
case "$mode" in
quick) CI=20 CW=3 TI=20 TW=3 ;;
final) CI=100 CW=10 TI=100 TW=10 ;;
*) echo "usage: bash bench/run_attention_cpu.sh quick|final" >&2; exit 2 ;;
esac
[ -f .gpu/env.sh ] && source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-/tmp/pocl-cache} CLFUSE_CACHE_DIR=${CLFUSE_CACHE_DIR:-/tmp/clfuse-cache}
export PYTHONUNBUFFERED=1
if [ -n "${ATTN_THREADS:-}" ]; then
  export POCL_MAX_PTHREAD_COUNT=$ATTN_THREADS OMP_NUM_THREADS=$ATTN_THREADS
fi
B=${ATTN_BUILD:-/tmp/build-cpu}
W=$(mktemp -d /tmp/attention-cpu-work.XXXXXX)
BUDGET=${ATTN_BUDGET_S:-540}
TORCH_RESERVE=240 # seconds kept for torch (import, torch.compile's C++ builds, the runs)
left() { echo $((BUDGET - (SECONDS - START))); }

# name, bench_attention options, the torch case it is compared with (empty: its own)
cat > "$W/cases.tsv" <<'EOF'
f32_full	--dtype f32 --b 1 --h 16 --s 512 --d 64	
f32_causal	--dtype f32 --b 1 --h 16 --s 512 --d 64 --causal	
f32_d128_causal	--dtype f32 --b 1 --h 16 --s 1024 --d 128 --causal	
f16_full	--dtype f16 --b 1 --h 16 --s 512 --d 64	
decode_f32	--dtype f32 --b 1 --h 32 --sq 1 --sk 4096 --d 128	
EOF
[ -n "${ATTN_CASES:-}" ] && cp "$ATTN_CASES" "$W/cases.tsv"

{ date -u +%Y-%m-%dT%H:%MZ; git describe --always --dirty 2>/dev/null || cat .gpu/commit 2>/dev/null || echo unknown
  echo "nproc $(nproc); POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-unset} OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
  lscpu 2>/dev/null | grep -E "^(Model name|Socket|Core|Thread|CPU\(s\)|L2|L3|Flags)" | cut -c1-200
  clinfo -l 2>/dev/null; } > "$OUT/env.txt" 2>&1
commit=$(sed -n 2p "$OUT/env.txt")

built=false
if [ -f "$B/build.ninja" ]; then
  t=$(left); [ "$t" -gt 300 ] && t=300
  timeout "$t" ninja -C "$B" bench/bench_attention > "$OUT/build.log" 2>&1 && built=true
  $built || { echo "build failed; libclfuse cases not run:"; tail -25 "$OUT/build.log"; }
else
  proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
  [ -f "$proto" ] || proto=/usr/include/onnx/onnx.proto
  popt=(); [ -f "$proto" ] && popt=(-Donnx_proto="$proto")
  t=$(left); [ "$t" -gt 300 ] && t=300
  if [ "$t" -gt 0 ] && timeout "$t" bash -c 'meson setup "$0" -Dtests=false --buildtype=release \
       --wrap-mode=nodownload "${@}" && ninja -C "$0" bench/bench_attention' "$B" "${popt[@]}" >> "$OUT/build.log" 2>&1; then
    built=true
  else
    echo "build failed; libclfuse cases not run:"; tail -25 "$OUT/build.log"
  fi
fi
echo "built in $((SECONDS - START)) s"

# libclfuse: each case alone, fused and unfused, with its own timeout.
while IFS=$'\t' read -r name opts tname; do
  [ -z "$name" ] && continue
  if ! $built; then
    echo "RESULT variant=fused ok=0 why=build-failed" > "$W/clf_$name.txt"; echo build > "$W/clf_$name.rc"; continue
  fi
  t=$(( $(left) - TORCH_RESERVE )); [ $t -gt 120 ] && t=120
  if [ $t -lt 15 ]; then
    echo "RESULT variant=fused ok=0 why=skipped-for-time" > "$W/clf_$name.txt"; echo skipped > "$W/clf_$name.rc"; continue
  fi
  # shellcheck disable=SC2086  # opts are words
  CLFUSE_DEVICE=cpu CLFUSE_LOGS=schedule timeout $t "$B/bench/bench_attention" $opts --iters $CI --warmup $CW --unfused \
    > "$W/clf_$name.txt" 2>&1 < /dev/null
  echo $? > "$W/clf_$name.rc"
  echo "== libclfuse $name (exit $(cat "$W/clf_$name.rc"), $((SECONDS - START)) s)"
  grep -E "^(fused|unfused): (device|check)|kernel 0 .*attention" "$W/clf_$name.txt"
done < "$W/cases.tsv"

# torch: every case it has in one process, each result flushed as it comes,
# so that a timeout keeps what was measured.
targs=()
while IFS=$'\t' read -r name opts tname; do
  [ -n "$name" ] && [ -z "$tname" ] && targs+=(--case "$name" "$opts")
done < "$W/cases.tsv"
t=$(( $(left) - 15 ))
if ! terr=$(timeout 120 python3 -c 'import torch' 2>&1); then
  echo "torch cannot be imported here (python3 -c 'import torch': ${terr##*$'\n'}); torch columns left empty" \
    > "$W/torch.log"
elif [ $t -ge 30 ]; then
  timeout $t python3 bench/attention/torch_attention.py --device cpu --iters $TI --warmup $TW "${targs[@]}" \
    > "$W/torch.log" 2>&1
  echo "== torch (exit $?, $((SECONDS - START)) s)"
else
  echo "torch: no time left ($t s)" > "$W/torch.log"
fi
grep -E "^(==|sdpa|compile|torch)" "$W/torch.log"

for f in "$W"/clf_*.txt; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .txt); echo "######## ${n#clf_} (exit $(cat "$W/$n.rc" 2>/dev/null))"; cat "$f"
done > "$OUT/clfuse.log"
cp "$W/torch.log" "$OUT/torch.log"
echo
python3 bench/attention/make_table.py --work "$W" --mode "$mode" --torch-device cpu --out "$OUT/attention_cpu.md" \
  --note "Commit $commit; $(date -u +%Y-%m-%d); $(nproc) CPUs (env.txt); libclfuse $CI runs ($CW warm-up) on \
PoCL, torch $TI calls ($TW warm-up) a case; inputs uniform in [-2, 2); $((SECONDS - START)) s in all."
rm -rf "$W"
