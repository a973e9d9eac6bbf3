#!/usr/bin/env bash
# Issue 20 probe, on the GPU machine's 16 cores (device tool, carry .gpu):
#     bash bench/probes/cpu_reduction_streams.sh [VACCS...]
# bench_reductions on PoCL with the CPU reduction form's vector accumulators
# (CPU_VACCS in src/codegen/codegen_reduction.c; each walks its own segment
# of the row, one memory stream each) set to each value given (default 1 2
# 4), one build of the tree per value, all in this call. Output in $OUT.
set -uo pipefail
[ -f .gpu/env.sh ] && source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export CLFUSE_DEVICE=cpu
vals=("$@"); [ ${#vals[@]} -eq 0 ] && vals=(1 2 4)
root=$PWD
for v in "${vals[@]}"; do
  t=/tmp/streams-$v
  rm -rf $t && mkdir -p $t && (cd "$root" && git ls-files -z -c -o --exclude-standard | xargs -0 cp --parents -t $t) 2>/dev/null ||
    cp -r "$root"/. $t
  sed -i "s/^#define CPU_VACCS .*/#define CPU_VACCS $v/" $t/src/codegen/codegen_reduction.c
  grep -q "^#define CPU_VACCS $v\$" $t/src/codegen/codegen_reduction.c || { echo "sed failed for $v"; exit 1; }
  proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
  (cd $t && meson setup b -Dtests=false --buildtype=release --wrap-mode=nodownload \
      $([ -f $proto ] && echo -Donnx_proto=$proto) > "$OUT/build-$v.log" 2>&1 &&
     ninja -C b bench/bench_reductions >> "$OUT/build-$v.log" 2>&1) || { tail -20 "$OUT/build-$v.log"; exit 1; }
done
for round in 1 2; do
  for v in "${vals[@]}"; do
    POCL_CACHE_DIR=/tmp/pocl-streams-$v CLFUSE_CACHE_DIR=/tmp/clfuse-streams-$v \
      timeout 150 /tmp/streams-$v/b/bench/bench_reductions --runs 20 > "$OUT/reductions-vaccs$v-round$round.txt" 2>&1
    echo "== CPU_VACCS $v round $round"
    grep -E "^(rowsum|softmax|layernorm|rmsnorm|horizontal|sumall|copy)" "$OUT/reductions-vaccs$v-round$round.txt"
  done
done
