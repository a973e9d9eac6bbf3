#!/usr/bin/env bash
# Issue 20 probe, on the GPU machine's 16 cores (device tool, carry .gpu):
#     bash bench/probes/cpu_own_exp.sh
# libclfuse's own exp (kernels_templates/exp.cl, commit 217a2d9, reverted: run
# it on a checkout of that commit) against PoCL's on CPU
# devices: one build of the tree as it is and one with own_exp off
# (src/runtime/executable.c), bench_reductions and 2^24-float Exp and
# Sigmoid through `clfuse bench --fused-only`, two rounds. Output in $OUT.
set -uo pipefail
[ -f .gpu/env.sh ] && source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export CLFUSE_DEVICE=cpu
root=$PWD
proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
for v in own builtin; do
  t=/tmp/exp-$v
  rm -rf $t && mkdir -p $t && (cd "$root" && git ls-files -z -c -o --exclude-standard | xargs -0 cp --parents -t $t)
  [ $v = builtin ] && sed -i 's/out->own_exp = ctx->desc.is_cpu \&\& !ctx->desc.is_gpu;/out->own_exp = false;/' \
    $t/src/runtime/executable.c
  (cd $t && meson setup b -Dtests=false --buildtype=release --wrap-mode=nodownload \
      $([ -f $proto ] && echo -Donnx_proto=$proto) > "$OUT/build-$v.log" 2>&1 &&
     ninja -C b bench/bench_reductions tools/clfuse/clfuse >> "$OUT/build-$v.log" 2>&1) ||
    { tail -20 "$OUT/build-$v.log"; exit 1; }
done
grep -c "own_exp = false" /tmp/exp-builtin/src/runtime/executable.c
for op in Exp Sigmoid; do
  printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[16777216] x) => (float[16777216] y) {\n  y = %s(x)\n}\n' $op \
    > /tmp/op_$op.onnxtxt
done
for round in 1 2; do
  for v in own builtin; do
    echo "== $v exp, round $round"
    POCL_CACHE_DIR=/tmp/pocl-exp-$v CLFUSE_CACHE_DIR=/tmp/clfuse-exp-$v \
      timeout 100 /tmp/exp-$v/b/bench/bench_reductions --runs 20 > "$OUT/red-$v-$round.txt" 2>&1
    grep -E "^(copy|softmax|layernorm)" "$OUT/red-$v-$round.txt"
    for op in Exp Sigmoid; do
      echo "$op $(POCL_CACHE_DIR=/tmp/pocl-exp-$v CLFUSE_CACHE_DIR=/tmp/clfuse-exp-$v timeout 60 \
        /tmp/exp-$v/b/tools/clfuse/clfuse bench /tmp/op_$op.onnxtxt --fused-only --runs 20 2>&1 | grep '^fused')"
    done
  done
done
