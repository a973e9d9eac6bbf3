#!/usr/bin/env bash
# The residual stream stored once (planner.c: a value computed from several
# stored results and read more than once), on the GPU machine against a
# base tree, one call of the device tool (carry .gpu; BASE_TREE=base-tree,
# made by `git archive <rev> | tar -x -C base-tree`):
#     BASE_TREE=base-tree bash bench/run_residual_gpu.sh
# bench_decoder (f16, Llama-3.2-1B shapes) with 2 and 8 layers, this tree
# and the base alternately, two rounds; llm_anchors.py (torch eager,
# torch.compile, CUDA graphs) in the same call; then the planner, fusion,
# gemm and kv_cache suites on the GPU. LAYERS="16" ROUNDS="1" ONLY_DECODER=1:
# other stacks and rounds, without the references and suites. Everything
# lands in $OUT (results.tar.gz).
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT/r"
R=$OUT/r
export POCL_CACHE_DIR=/tmp/pocl-cache
B=/tmp/build-residual BB=/tmp/build-residual-base
opts="--buildtype=release --wrap-mode=nodownload -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
{ [ -f $B/build.ninja ] || meson setup $B -Dtests=$([ -n "${ONLY_DECODER:-}" ] && echo false || echo true) $opts; } > "$R/build.log" 2>&1
{ [ -f $BB/build.ninja ] || (cd "$BASE_TREE" && meson setup $BB -Dtests=false $opts); } > "$R/build_base.log" 2>&1
ninja -C $B >> "$R/build.log" 2>&1 & ninja -C $BB >> "$R/build_base.log" 2>&1 & wait
[ -x $B/bench/bench_decoder ] && [ -x $BB/bench/bench_decoder ] || { tail -20 "$R"/build*.log; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv; git log -1 --oneline 2>/dev/null; } > "$R/log.txt" 2>&1
for layers in ${LAYERS:-2 8}; do
  for r in ${ROUNDS:-1 2}; do
    for t in head base; do
      bin=$B/bench/bench_decoder; [ $t = base ] && bin=$BB/bench/bench_decoder
      f="$R/dec_L${layers}_${t}_$r.md"
      CLFUSE_DEVICE=gpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-res-$t timeout 240 $bin --layers $layers --runs 30 --markdown \
        > "$f" 2>&1
      echo "== $layers layers, $t, round $r"; grep -E "self-check|^\| (prefill|decode)" "$f"
    done
  done
done
if [ -z "${ONLY_DECODER:-}" ]; then
  timeout 200 python3 .gpu/llm_anchors.py > "$R/llm_anchors.txt" 2>&1
  tail -12 "$R/llm_anchors.txt"
  CLFUSE_DEVICE=gpu timeout 150 meson test -C $B --suite planner --suite fusion --suite gemm --suite kv_cache \
    --num-processes 8 --print-errorlogs > "$R/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$R/tests_gpu.txt"
fi
tar -czf "$OUT/results.tar.gz" -C "$OUT" r && rm -rf "$R"
