#!/usr/bin/env bash
# A norm's statistics computed in the loads of the product after it
# (planner.c's row statistics), on the GPU machine against a base tree,
# each stage one call of the device tool (carry .gpu; BASE_TREE=base-tree,
# made by `git archive <rev> | tar -x -C base-tree`):
#     bash bench/run_row_stats_gpu.sh quick    the tiny fixtures, this tree /
#                                              base / this tree again, with
#                                              torch and onnxruntime in the
#                                              same call (run_models_gpu.sh
#                                              quick)
#     bash bench/run_row_stats_gpu.sh decoder  bench_decoder (f16, 2 layers)
#                                              head and base, twice; then the
#                                              fusion, gemm and planner suites
#                                              and tests/test_models.py (fused)
#                                              on the GPU
#     bash bench/run_row_stats_gpu.sh pocl     the tiny fixtures on PoCL (16
#                                              cores), head and base
#                                              alternately, onnxruntime in the
#                                              same rounds
# Results in $OUT.
set -uo pipefail
source bench/gpu_build.sh
BB=/tmp/build-base-models # the base build run_models_gpu.sh makes
base_build() {
  if [ ! -f $BB/build.ninja ]; then
    (cd "$BASE_TREE" && meson setup $BB -Dtests=false --buildtype=release --wrap-mode=nodownload \
       -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto) > "$OUT/build_base.log" 2>&1
  fi
  ninja -C $BB >> "$OUT/build_base.log" 2>&1 || { tail -20 "$OUT/build_base.log"; exit 1; }
}
case "${1:-quick}" in
quick)
  MODELS_AUTOTUNE=0 bash bench/models/run_models_gpu.sh quick > "$OUT/quick.txt" 2>&1
  grep -E "^==|^fused |onnxruntime|torch" "$OUT/quick.txt" | cut -c1-150
  ;;
decoder)
  base_build
  for r in 1 2; do
    for t in head base; do
      bin=$B/bench/bench_decoder; [ $t = base ] && bin=$BB/bench/bench_decoder
      f="$OUT/dec_${t}_$r.md"
      CLFUSE_DEVICE=gpu CLFUSE_CACHE_DIR=/tmp/clfuse-cache-$t timeout 150 $bin --layers 2 --runs 30 --markdown > "$f" 2>&1
      echo "== decoder $t $r"; grep -E "^\| (prefill|decode)" "$f"
    done
  done
  CLFUSE_DEVICE=gpu timeout 240 meson test -C $B --suite fusion --suite gemm --suite planner --num-processes 8 \
    --print-errorlogs > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
  CLFUSE_DEVICE=gpu CLFUSE_MODELS_UNFUSED=none CLFUSE_MODELS_JOBS=8 timeout 150 python3 tests/test_models.py $B/tools/clfuse/clfuse tests/models \
    > "$OUT/models_gpu.txt" 2>&1
  tail -3 "$OUT/models_gpu.txt"
  ;;
pocl)
  base_build
  CLFUSE_DEVICE=cpu timeout 200 bash bench/cpu/tiny_ab_pocl.sh $BB $B 2 python3 > "$OUT/pocl16.txt" 2>&1
  cut -c1-130 "$OUT/pocl16.txt"
  ;;
esac
