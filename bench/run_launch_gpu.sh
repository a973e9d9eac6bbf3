#!/usr/bin/env bash
# Host launch cost and the session's runtime changes on the GPU machine
# (one call of the device tool; carry .gpu; BASE_TREE=base-tree, made by
# `git archive <rev> | tar -x -C base-tree`):
#     BASE_TREE=base-tree bash bench/run_launch_gpu.sh [probe|suites|tiny]
# Every stage: the tiny TorchScript fixtures, this tree and the base
# alternately (clfuse bench --fused-only: wall and back-to-back ms), and
# torch eager / torch.compile and onnxruntime for the fixtures in the same
# call (bench/models/bench_models.py). probe (default) and suites also run
# bench_decoder (f16, 2 layers), this tree and the base, twice; probe first
# runs bench/probes/launch_cost.c (what clEnqueueNDRangeKernel, argument
# setting, events and switching kernels cost the host a launch); suites
# builds this tree with the tests and runs the fusion, gemm and kv_cache
# suites (bench_decoder's self-check in both forms among them) on the GPU;
# tiny runs four rounds of the fixtures and the references only; cpu runs
# the fixtures and bench_decoder (one layer, 3 runs) on PoCL over the
# machine's cores (CLFUSE_DEVICE=cpu) instead of the GPU, and onnxruntime
# (every core) in the same call.
# Everything lands in $OUT (results.tar.gz); a summary is printed.
set -uo pipefail
source .gpu/env.sh
stage=${1:-probe}
dev=gpu dec="--layers 2 --runs 30"
[ "$stage" = cpu ] && dev=cpu dec="--layers 1 --runs 3"
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT/r"
R=$OUT/r
export POCL_CACHE_DIR=/tmp/pocl-cache
B=/tmp/build-launch BB=/tmp/build-launch-base
tests=false; [ "$stage" = suites ] && tests=true
opts="--buildtype=release --wrap-mode=nodownload -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
{ [ -f $B/build.ninja ] || meson setup $B -Dtests=$tests $opts; } > "$R/build.log" 2>&1
{ [ -f $BB/build.ninja ] || (cd "$BASE_TREE" && meson setup $BB -Dtests=false $opts); } > "$R/build_base.log" 2>&1
ninja -C $B >> "$R/build.log" 2>&1 & ninja -C $BB >> "$R/build_base.log" 2>&1 & wait
[ -x $B/tools/clfuse/clfuse ] && [ -x $BB/tools/clfuse/clfuse ] || { tail -20 "$R"/build*.log; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; git log -1 --oneline 2>/dev/null; } > "$R/log.txt" 2>&1
if [ "$stage" = probe ]; then
  gcc -O2 -o /tmp/launch_cost bench/probes/launch_cost.c -lOpenCL >> "$R/log.txt" 2>&1
  timeout 60 /tmp/launch_cost > "$R/launch_cost.txt" 2>&1
  echo "== launch_cost"; cat "$R/launch_cost.txt"
fi
rounds="1 2 3"; [ "$stage" = tiny ] && rounds="1 2 3 4"
for r in $rounds; do
  for t in head base; do
    cli=$B/tools/clfuse/clfuse; [ $t = base ] && cli=$BB/tools/clfuse/clfuse
    for m in llama gpt2 bert; do
      CLFUSE_DEVICE=$dev CLFUSE_CACHE_DIR=/tmp/clfuse-cache-$t timeout 100 $cli bench \
        tests/models/${m}_torchscript_ids/model.onnx --runs 300 --fused-only > "$R/bench_${m}_${t}_$r.txt" 2>&1
      grep -E '^fused ' "$R/bench_${m}_${t}_$r.txt" | sed "s/^/$r $t $m /" | tee -a "$R/models.txt"
    done
  done
done
for r in $([ "$stage" = tiny ] || echo 1 2); do
  for t in head base; do
    bin=$B/bench/bench_decoder; [ $t = base ] && bin=$BB/bench/bench_decoder
    CLFUSE_DEVICE=$dev CLFUSE_CACHE_DIR=/tmp/clfuse-cache-dec-$t timeout 100 $bin $dec --markdown \
      > "$R/dec_${t}_$r.md" 2>&1
    echo "== decoder $t $r"; grep -E "self-check|^\| (prefill|decode)" "$R/dec_${t}_$r.md"
  done
done
if [ "$stage" = suites ]; then
  CLFUSE_DEVICE=gpu timeout 200 meson test -C $B --suite fusion --suite gemm --suite kv_cache --num-processes 8 \
    --print-errorlogs > "$R/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$R/tests_gpu.txt"
fi
PYTHONUNBUFFERED=1 timeout 200 python3 bench/models/bench_models.py $([ "$stage" = cpu ] && echo --no-torch) > "$R/refs.jsonl" 2> "$R/refs.log"
cut -c1-160 "$R/refs.jsonl"
tar -czf "$OUT/results.tar.gz" -C "$OUT" r && rm -rf "$R"
