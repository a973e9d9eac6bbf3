#!/usr/bin/env bash
# The model benchmark of issue 15 on the GPU machine (carry .gpu; run
# ../shared/gpu/prepare and bench/models/prepare_gpu.sh here first):
#     bash bench/models/run_models_gpu.sh tiny     # fixtures: GPU, PoCL, torch, onnxruntime, suites on the GPU
#     bash bench/models/run_models_gpu.sh large    # the Llama-shaped stack (hidden 2048, 2 layers, seq 512, f32)
#     bash bench/models/run_models_gpu.sh quick    # the three TorchScript tiny fixtures on the GPU (default and
#                                                  # autotuned tiles; MODELS_AUTOTUNE=0: default only), a
#                                                  # launch-floor chain, torch in the same call;
#                                                  # MODELS_ALSO="VAR=value": each also with it, then
#                                                  # the default again; BASE_TREE=dir (a tree
#                                                  # from git archive): each also with that
#                                                  # tree's clfuse, then this one's again
# Everything lands in $OUT; a summary is printed last.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=${MODELS_BUILD:-/tmp/build-gpu} # an existing build directory is reused
stage=${1:-tiny}
tests=false; [ "$stage" = tiny ] && tests=true
setup="meson setup $B -Dtests=$tests --buildtype=release --wrap-mode=nodownload"
setup+=" -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
[ -f "$B/build.ninja" ] && setup=true
if ! { $setup && ninja -C $B; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ clinfo -l; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; git log -1 --format=%H 2>/dev/null; } > "$OUT/log.txt" 2>&1
CLI=$B/tools/clfuse/clfuse
BASE_CLI=
if [ -n "${BASE_TREE:-}" ]; then
  BB=/tmp/build-base-models
  if ! { [ -f $BB/build.ninja ] || (cd "$BASE_TREE" && meson setup $BB -Dtests=false --buildtype=release \
      --wrap-mode=nodownload -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto); } > "$OUT/build_base.log" 2>&1 ||
     ! ninja -C $BB >> "$OUT/build_base.log" 2>&1; then
    tail -40 "$OUT/build_base.log"; exit 1
  fi
  BASE_CLI=$BB/tools/clfuse/clfuse
fi
bench() { # model dir, label, runs
  for dev in gpu cpu; do
    CLFUSE_DEVICE=$dev timeout 300 $CLI bench "$1/model.onnx" --runs "$3" > "$OUT/bench_$2_$dev.txt" 2>&1
    echo "== $2 on $dev"; grep -E "^(unfused|fused) " "$OUT/bench_$2_$dev.txt"
  done
}
if [ "$stage" = quick ]; then
  # Launch floor: 28 chained Relu on 1024 floats, 28 kernels unfused, 1 fused.
  python3 - > /tmp/floor.onnxtxt <<'PY'
print('<ir_version: 8, opset_import: ["" : 17]>')
print('floor (float[1024] x) => (float[1024] y) {')
prev = 'x'
for i in range(27):
    print(f'  t{i} = Relu({prev})'); prev = f't{i}'
print(f'  y = Relu({prev})')
print('}')
PY
  CLFUSE_DEVICE=gpu timeout 120 $CLI bench /tmp/floor.onnxtxt --runs 500 > "$OUT/bench_floor_gpu.txt" 2>&1
  echo "== launch floor (28 kernels unfused)"; grep -E "^(unfused|fused) " "$OUT/bench_floor_gpu.txt"
  for fam in llama gpt2 bert; do
    d=tests/models/${fam}_torchscript_ids
    CLFUSE_DEVICE=gpu timeout 200 $CLI bench "$d/model.onnx" --runs 300 > "$OUT/bench_${fam}_gpu.txt" 2>&1
    echo "== $fam default tiles"; grep -E "^(unfused|fused) " "$OUT/bench_${fam}_gpu.txt"
    if [ -n "${MODELS_ALSO:-}" ]; then # the same with a switch, e.g. CLFUSE_MERGE_PRODUCTS=0
      env CLFUSE_DEVICE=gpu $MODELS_ALSO timeout 200 $CLI bench "$d/model.onnx" --runs 300 > "$OUT/bench_${fam}_also_gpu.txt" 2>&1
      echo "== $fam with $MODELS_ALSO"; grep -E "^(unfused|fused) " "$OUT/bench_${fam}_also_gpu.txt"
      CLFUSE_DEVICE=gpu timeout 200 $CLI bench "$d/model.onnx" --runs 300 > "$OUT/bench_${fam}_again_gpu.txt" 2>&1
      echo "== $fam default tiles again"; grep -E "^(unfused|fused) " "$OUT/bench_${fam}_again_gpu.txt"
    fi
    if [ -n "$BASE_CLI" ]; then
      CLFUSE_DEVICE=gpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-base timeout 200 $BASE_CLI bench "$d/model.onnx" --runs 300 \
        > "$OUT/bench_${fam}_base_gpu.txt" 2>&1
      echo "== $fam base tree"; grep -E "^(unfused|fused) " "$OUT/bench_${fam}_base_gpu.txt"
      CLFUSE_DEVICE=gpu timeout 200 $CLI bench "$d/model.onnx" --runs 300 > "$OUT/bench_${fam}_again_gpu.txt" 2>&1
      echo "== $fam this tree again"; grep -E "^(unfused|fused) " "$OUT/bench_${fam}_again_gpu.txt"
    fi
    if [ "${MODELS_AUTOTUNE:-1}" != 0 ]; then
      CLFUSE_DEVICE=gpu CLFUSE_AUTOTUNE=1 timeout 200 $CLI bench "$d/model.onnx" --runs 300 > "$OUT/bench_${fam}_tuned_gpu.txt" 2>&1
      echo "== $fam autotuned"; grep -E "^(unfused|fused) " "$OUT/bench_${fam}_tuned_gpu.txt"
    fi
    CLFUSE_DEVICE=gpu CLFUSE_LOGS=perf timeout 120 $CLI run "$d/model.onnx" $(for f in "$d"/input_*.npy; do n=$(basename "$f" .npy); echo --input "${n#input_}=$f"; done) \
      > /dev/null 2> "$OUT/perf_${fam}_gpu.txt"
  done
  grep -h "kernel\|ms" "$OUT"/perf_llama_gpu.txt | head -40
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/models/bench_models.py > "$OUT/refs.jsonl" 2> "$OUT/refs.log"
  cat "$OUT/refs.jsonl"
elif [ "$stage" = tiny ]; then
  for fam in llama gpt2 bert; do
    for exp in torchscript dynamo; do
      d=tests/models/${fam}_${exp}_ids
      bench "$d" "${fam}_${exp}" 300
      CLFUSE_DEVICE=gpu CLFUSE_LOGS=perf timeout 120 $CLI run "$d/model.onnx" $(for f in "$d"/input_*.npy; do n=$(basename "$f" .npy); echo --input "${n#input_}=$f"; done) \
        > /dev/null 2> "$OUT/perf_${fam}_${exp}_gpu.txt"
    done
  done
  PYTHONUNBUFFERED=1 timeout 420 python3 bench/models/bench_models.py > "$OUT/refs.jsonl" 2> "$OUT/refs.log"
  cat "$OUT/refs.jsonl"
  CLFUSE_DEVICE=gpu timeout 300 meson test -C $B --suite onnx --suite models --suite ops --suite fusion \
    --suite reductions --suite reference --num-processes 8 --print-errorlogs > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
else
  X=/tmp/bench-fx
  PYTHONUNBUFFERED=1 timeout 300 python3 tests/models/make_fixtures.py --size bench --families llama \
    --exporters torchscript --inputs ids --outdir $X --threads 16 > "$OUT/export.log" 2>&1
  tail -3 "$OUT/export.log"
  d=$X/llama_torchscript_ids
  CLFUSE_DEVICE=gpu timeout 300 $CLI bench "$d/model.onnx" --runs 30 > "$OUT/bench_llama_large_gpu.txt" 2>&1
  echo "== llama_large on gpu"; grep -E "^(unfused|fused) " "$OUT/bench_llama_large_gpu.txt"
  CLFUSE_DEVICE=gpu CLFUSE_LOGS=perf timeout 200 $CLI run "$d/model.onnx" $(for f in "$d"/input_*.npy; do n=$(basename "$f" .npy); echo --input "${n#input_}=$f"; done) \
    > /dev/null 2> "$OUT/perf_llama_large_gpu.txt"
  tail -40 "$OUT/perf_llama_large_gpu.txt"
  CLFUSE_DEVICE=cpu timeout 300 $CLI bench "$d/model.onnx" --runs 3 > "$OUT/bench_llama_large_pocl.txt" 2>&1
  echo "== llama_large on pocl"; grep -E "^(unfused|fused) " "$OUT/bench_llama_large_pocl.txt"
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/models/bench_models.py --families --bench $X > "$OUT/refs_large.jsonl" 2> "$OUT/refs_large.log"
  cat "$OUT/refs_large.jsonl"
fi
