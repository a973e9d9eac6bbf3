#!/usr/bin/env bash
# CPU devices at full speed (issue 20) on the GPU machine's 16 cores: libclfuse
# on PoCL (CLFUSE_DEVICE=cpu) against PyTorch on the same CPU in one call.
#     bash bench/run_cpu_pocl.sh [all|threads]   (device tool, carry .gpu)
# threads: PoCL's per-launch cost against its worker count (a 1024-float
# Relu and the tiny Llama fixture with POCL_CPU_MAX_CU_COUNT 1-16), the Llama
# fixture's cold compile, and torch's memory-bound CPU cases; nothing else.
# bench_gemm (gemm_epilogue 1024^3, mlp) with the default CPU tiling and
# autotuned, bench_pointwise and bench_reductions (the copy roofline a copy
# kernel over every core), bench/cpu/torch_cpu.py (eager and torch.compile),
# the tiny model fixtures through `clfuse bench` against onnxruntime's CPU
# provider (all cores), and the cold compile of the Llama fixture (empty
# caches, `clfuse run` under CLFUSE_LOGS=cache).
# Writes $OUT/cpu.txt (everything, the summary printed last), build.log and
# env.txt. Each step has its own timeout.
set -uo pipefail
START=$SECONDS
[ -f .gpu/env.sh ] && source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache-cpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-cpu PYTHONUNBUFFERED=1
B=/tmp/build-cpu
{ date -u +%Y-%m-%dT%H:%MZ; git log -1 --oneline 2>/dev/null || cat .gpu/commit 2>/dev/null
  echo "nproc $(nproc)"
  lscpu 2>/dev/null | grep -E "^(Model name|Socket|Core|Thread|CPU\(s\)|CPU max MHz|L1d|L2|L3|Flags)" | cut -c1-300
  clinfo -l 2>/dev/null; } > "$OUT/env.txt" 2>&1
proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
if ! { [ -f $B/build.ninja ] || meson setup $B -Dtests=false --buildtype=release --wrap-mode=nodownload \
         $([ -f $proto ] && echo -Donnx_proto=$proto); } \
       > "$OUT/build.log" 2>&1 || ! timeout 300 ninja -C $B bench/bench_gemm bench/bench_pointwise \
       bench/bench_reductions tools/clfuse/clfuse >> "$OUT/build.log" 2>&1; then
  tail -30 "$OUT/build.log"; exit 1
fi
echo "built in $((SECONDS - START)) s"
R="$OUT/cpu.txt"
: > "$R"
run() { # label timeout command...
  local label=$1 t=$2; shift 2
  echo "== $label ($((SECONDS - START)) s)" >> "$R"
  CLFUSE_DEVICE=cpu timeout "$t" "$@" >> "$R" 2>&1 < /dev/null || echo "(exit $?)" >> "$R"
}
stage=${1:-all}
if [ "$stage" = threads ]; then
  printf '<ir_version: 8, opset_import: ["" : 17]>\nrelu1024 (float[1024] x) => (float[1024] y) {\n  y = Relu(x)\n}\n' \
    > /tmp/relu1024.onnxtxt
  for t in 16 1 2 4 8 16a; do
    n=${t%a}; aff=0; [ "$t" != "$n" ] && aff=1
    for m in /tmp/relu1024.onnxtxt tests/models/llama_torchscript_ids/model.onnx; do
      POCL_CPU_MAX_CU_COUNT=$n POCL_MAX_PTHREAD_COUNT=$n POCL_AFFINITY=$aff \
        run "threads $n affinity $aff $(basename $(dirname $m))/$(basename $m)" 120 \
        $B/tools/clfuse/clfuse bench $m --runs 300 --fused-only
    done
  done
fi
[ "$stage" = all ] && run "bench_gemm default tiling" 150 $B/bench/bench_gemm --runs 20
# Cold compile of the Llama fixture: empty PoCL and libclfuse caches.
for pass in cold warm; do
  [ $pass = cold ] && rm -rf /tmp/pocl-cache-cold /tmp/clfuse-cache-cold
  d=tests/models/llama_torchscript_ids
  t0=$(date +%s.%N)
  POCL_CACHE_DIR=/tmp/pocl-cache-cold CLFUSE_CACHE_DIR=/tmp/clfuse-cache-cold CLFUSE_LOGS=cache \
    run "llama compile $pass" 300 $B/tools/clfuse/clfuse run $d/model.onnx \
    --input input_ids=$d/input_input_ids.npy --input attention_mask=$d/input_attention_mask.npy \
    --output logits=/tmp/logits.npy
  echo "llama $pass compile+run wall $(awk "BEGIN{print $(date +%s.%N) - $t0}") s" >> "$R"
done
if [ "$stage" = threads ]; then
  echo "== torch memory-bound ($((SECONDS - START)) s)" >> "$R"
  timeout 300 python3 bench/cpu/torch_cpu.py --cases memory --iters 20 --warmup 3 >> "$R" 2>&1 ||
    echo "(torch exit $?)" >> "$R"
  grep -E "^(==|fused|torch|llama .*wall|\(exit)" "$R"
  exit 0
fi
for fam in llama gpt2 bert; do
  run "model $fam" 200 $B/tools/clfuse/clfuse bench tests/models/${fam}_torchscript_ids/model.onnx --runs 200 --fused-only
done
echo "== onnxruntime ($((SECONDS - START)) s)" >> "$R"
timeout 200 python3 - >> "$R" 2>&1 <<'PY' || echo "(onnxruntime exit $?)" >> "$R"
import os, sys
sys.path.insert(0, "bench/models")
from bench_models import load_inputs, ort_time  # the model benchmark's own onnxruntime timing
for fam in ("llama", "gpt2", "bert"):
    d = f"tests/models/{fam}_torchscript_ids"
    ms = ort_time(f"{d}/model.onnx", load_inputs(d), 200, 20)
    print(f"onnxruntime {fam} {ms:.3f} ms median of 200, {os.cpu_count()} threads")
PY
echo "== torch ($((SECONDS - START)) s)" >> "$R"
timeout 240 python3 bench/cpu/torch_cpu.py --iters 50 --warmup 5 >> "$R" 2>&1 || echo "(torch exit $?)" >> "$R"
run "bench_pointwise" 120 $B/bench/bench_pointwise --runs 10
run "bench_reductions" 150 $B/bench/bench_reductions --runs 10
CLFUSE_AUTOTUNE=1 run "bench_gemm autotuned" 200 $B/bench/bench_gemm --runs 20
echo "== done ($((SECONDS - START)) s)" >> "$R"
grep -E "^(==|gemm_epilogue|mlp|torch|copy roofline|\(exit|llama .*wall|onnxruntime|unfused|fused|\[clfuse:cache\] kernel 24)" "$R"
