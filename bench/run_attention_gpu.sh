#!/usr/bin/env bash
# Fused attention, softmax(q kT scale + mask) v: libclfuse (bench/bench_attention)
# against PyTorch's SDPA and torch.compile of the same graph
# (bench/attention/torch_attention.py), in one call on the GPU machine. Carry .gpu
# (../shared/gpu/prepare, then bench/models/prepare_gpu.sh for protobuf-c and onnx.proto):
#     bash bench/run_attention_gpu.sh quick    # 30 libclfuse runs, 50 torch calls a case
#     bash bench/run_attention_gpu.sh final    # 300 and 300
# Writes $OUT/attention.md (the table, printed last) and the raw logs beside it
# (clfuse.log, torch.log, build.log, env.txt). Every step has a timeout inside a
# budget of ATTN_BUDGET_S seconds (default 540); a case that fails, times out or
# is skipped for time is recorded as such in the table, never stopping the rest.
# For a try elsewhere: ATTN_DEVICE (default gpu) is the CLFUSE_DEVICE of the
# libclfuse runs, ATTN_CASES a cases file of the form below (tab-separated).
set -uo pipefail
START=$SECONDS
mode=${1:-quick}
case "$mode" in
quick) CI=30 CW=5 TI=50 TW=10 ;;
final) CI=300 CW=20 TI=300 TW=30 ;;
*) echo "usage: bash bench/run_attention_gpu.sh quick|final" >&2; exit 2 ;;
esac
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache PYTHONUNBUFFERED=1
B=/tmp/build-gpu
W=/tmp/attention-work
rm -rf "$W"; mkdir -p "$W"
BUDGET=${ATTN_BUDGET_S:-540}
TORCH_RESERVE=240 # seconds kept for torch (import, nine torch.compile builds, the runs)
left() { echo $((BUDGET - (SECONDS - START))); }

# name, bench_attention options, the torch case it is compared with (empty: its own)
cat > "$W/cases.tsv" <<'EOF'
f32_full	--dtype f32 --b 8 --h 16 --s 1024 --d 64	
f32_causal	--dtype f32 --b 8 --h 16 --s 1024 --d 64 --causal	
f16_full	--dtype f16 --b 8 --h 16 --s 1024 --d 64	
f16_causal	--dtype f16 --b 8 --h 16 --s 1024 --d 64 --causal	
bf16_full	--dtype bf16 --b 8 --h 16 --s 1024 --d 64	
f16_d128_causal	--dtype f16 --b 4 --h 32 --s 1024 --d 128 --causal	
decode_f16_b1	--dtype f16 --b 1 --h 32 --sq 1 --sk 4096 --d 128	
decode_f16_b8	--dtype f16 --b 8 --h 32 --sq 1 --sk 4096 --d 128	
gqa_f16_causal	--dtype f16 --b 4 --h 32 --hkv 8 --s 1024 --d 128 --causal	
gqa_f16_causal_bcast	--dtype f16 --b 4 --h 32 --hkv 8 --s 1024 --d 128 --causal --gqa broadcast	gqa_f16_causal
EOF
[ -n "${ATTN_CASES:-}" ] && cp "$ATTN_CASES" "$W/cases.tsv"

{ date -u +%Y-%m-%dT%H:%MZ; git describe --always --dirty 2>/dev/null || cat .gpu/commit 2>/dev/null || echo unknown
  clinfo -l; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > "$OUT/env.txt" 2>&1
commit=$(sed -n 2p "$OUT/env.txt")

proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
[ -f "$proto" ] || proto=/usr/include/onnx/onnx.proto
built=false
# An existing build directory (ATTN_BUILD, e.g. one with the tests) is reused.
B=${ATTN_BUILD:-$B}
setup="meson setup $B -Dtests=false --buildtype=release --wrap-mode=nodownload -Donnx_proto=$proto"
[ -f "$B/build.ninja" ] && setup=true
if timeout $(( $(left) > 300 ? 300 : $(left) )) bash -c "$setup && ninja -C $B bench/bench_attention" \
     > "$OUT/build.log" 2>&1; then
  built=true
else
  echo "build failed; libclfuse cases not run:"; tail -25 "$OUT/build.log"
fi
echo "built in $((SECONDS - START)) s"

# libclfuse: each case alone, fused and unfused, with its own timeout.
while IFS=$'\t' read -r name opts tname; do
  $built || continue
  t=$(( $(left) - TORCH_RESERVE )); [ $t -gt 150 ] && t=150
  if [ $t -lt 15 ]; then
    echo "RESULT variant=fused ok=0 why=skipped-for-time" > "$W/clf_$name.txt"; echo skipped > "$W/clf_$name.rc"; continue
  fi
  # shellcheck disable=SC2086  # opts are words
  CLFUSE_DEVICE=${ATTN_DEVICE:-gpu} timeout $t $B/bench/bench_attention $opts --iters $CI --warmup $CW --unfused \
    > "$W/clf_$name.txt" 2>&1 < /dev/null
  echo $? > "$W/clf_$name.rc"
  echo "== libclfuse $name (exit $(cat "$W/clf_$name.rc"), $((SECONDS - START)) s)"
  grep -E "^(fused|unfused): (device|check)" "$W/clf_$name.txt"
done < "$W/cases.tsv"

# torch: every case it has (not the libclfuse-only variants) in one process,
# each result flushed as it comes, so a timeout keeps what was measured.
targs=()
while IFS=$'\t' read -r name opts tname; do
  [ -z "$tname" ] && targs+=(--case "$name" "$opts")
done < "$W/cases.tsv"
t=$(( $(left) - 15 ))
if [ $t -ge 30 ]; then
  timeout $t python3 bench/attention/torch_attention.py --iters $TI --warmup $TW "${targs[@]}" > "$W/torch.log" 2>&1
  echo "== torch (exit $?, $((SECONDS - START)) s)"
else
  echo "torch: no time left ($t s)" > "$W/torch.log"
fi
grep -E "^(==|sdpa|compile)" "$W/torch.log" | grep -v "CUDA kernels"

for f in "$W"/clf_*.txt; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .txt); echo "######## ${n#clf_} (exit $(cat "$W/$n.rc" 2>/dev/null))"; cat "$f"
done > "$OUT/clfuse.log"
cp "$W/torch.log" "$OUT/torch.log"
echo
python3 bench/attention/make_table.py --work "$W" --mode "$mode" --out "$OUT/attention.md" \
  --note "Commit $commit; $(date -u +%Y-%m-%d); libclfuse $CI runs ($CW warm-up), torch $TI calls ($TW warm-up) a case; \
inputs uniform in [-2, 2), rotated among copies that exceed 256 MiB together; $((SECONDS - START)) s in all." \
  --note "gqa_f16_causal_bcast is libclfuse alone with q split to [B, Hkv, H/Hkv, Sq, D] against k, v [B, Hkv, 1, Sk, D] (batch broadcast) instead of k, v expanded to H heads; its torch columns repeat gqa_f16_causal's."
