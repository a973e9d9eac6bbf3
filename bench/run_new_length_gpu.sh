#!/usr/bin/env bash
# An ONNX model's new length on the GPU machine (issue 19), through the
# device tool (carry .gpu; see shared BENCH.md): examples/generate_kv on the
# KV fixture, built from this tree and from a base tree, run alternately in
# the same call so that the two builds meet the same machine state.
#     git archive <rev> | tar -x -C base-tree       # here, before the call
#     BASE_TREE=base-tree bash bench/run_new_length_gpu.sh [suites...]
# Suites named after it run on the H200 first (meson test --suite each).
# Results in $OUT: generate_kv_<build>_<i>.txt, tests_gpu.txt.
set -uo pipefail
source bench/gpu_build.sh
if [ $# -gt 0 ]; then
  suites=""; for s in "$@"; do suites+=" --suite $s"; done
  CLFUSE_DEVICE=gpu timeout ${SUITES_TIMEOUT:-240} meson test -C $B $suites --num-processes 8 --print-errorlogs \
    > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
fi
builds="head=$B/examples/generate_kv"
if [ -n "${BASE_TREE:-}" ]; then
  BB=/tmp/build-gpu-base
  if ! { [ -f $BB/build.ninja ] || meson setup $BB "$BASE_TREE" -Dtests=false --buildtype=release \
           --wrap-mode=nodownload -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto; } \
         > "$OUT/build_base.log" 2>&1 || ! ninja -C $BB examples/generate_kv >> "$OUT/build_base.log" 2>&1; then
    tail -20 "$OUT/build_base.log"; exit 1
  fi
  builds+=" base=$BB/examples/generate_kv"
fi
model=tests/models/llama_torchscript_kv/model.onnx
for i in 1 2 3; do
  for b in $builds; do
    name=${b%%=*}; exe=${b#*=}
    CLFUSE_DEVICE=gpu timeout 60 $exe $model --prompt 1,2,3,4 --steps 60 --max-len 70 \
      > "$OUT/generate_kv_${name}_$i.txt" 2>&1
    echo "== $name $i: $(grep -E 'decode steps|first decode' "$OUT/generate_kv_${name}_$i.txt" | tr '\n' ' ')"
  done
done
