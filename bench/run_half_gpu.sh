#!/usr/bin/env bash
# Issue 16 on the GPU machine (carry .gpu; run ../shared/gpu/prepare and
# bench/models/prepare_gpu.sh here first):
#     bash bench/run_half_gpu.sh tests     # build; the half, ops, reductions, gemm, onnx suites on the H200
#     bash bench/run_half_gpu.sh bench     # BENCH.md suite in f32, f16, bf16 on the H200 with torch's
#                                          # anchors in the same dtypes, in the same call
#     bash bench/run_half_gpu.sh pocl      # the same suite on PoCL (16 cores) in f16 and f32
#     bash bench/run_half_gpu.sh final     # f16/bf16 rounding bit for bit on the GPU, the f16 and bf16
#                                          # suite with torch's anchors, the f16 model fixtures (a tgz)
# Everything lands in $OUT; a summary is printed.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=/tmp/build-gpu
stage=${1:-tests}
if ! { meson setup $B -Dtests=true --buildtype=release --wrap-mode=nodownload \
         -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto && ninja -C $B; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ clinfo -l; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; git log -1 --format=%H 2>/dev/null; } > "$OUT/log.txt" 2>&1
case "$stage" in
tests)
  CLFUSE_DEVICE=gpu timeout 500 meson test -C $B --suite half --suite ops --suite reductions --suite gemm --suite onnx \
    --suite codegen --num-processes 12 --print-errorlogs > "$OUT/tests_gpu.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests_gpu.txt"
  grep -E "^[^ ].*:[0-9]+:[EF]:" "$OUT/tests_gpu.txt" | head -30
  ;;
bench)
  for dt in f32 f16 bf16; do
    for n in bench_pointwise bench_reductions; do
      CLFUSE_DEVICE=gpu timeout 120 $B/bench/$n --markdown --dtype $dt > "$OUT/${n}_${dt}_gpu.md" 2>> "$OUT/log.txt"
      echo "== $n $dt"; cat "$OUT/${n}_${dt}_gpu.md"
    done
    CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_gemm --markdown --dtype $dt --only gemm_epilogue > "$OUT/bench_gemm_${dt}_gpu.md" 2>> "$OUT/log.txt"
    echo "== bench_gemm $dt"; cat "$OUT/bench_gemm_${dt}_gpu.md"
  done
  for dt in float32 float16 bfloat16; do
    PYTHONUNBUFFERED=1 timeout 200 python3 .gpu/torch_anchors.py cuda $dt > "$OUT/torch_$dt.txt" 2>&1
    echo "== torch $dt"; cat "$OUT/torch_$dt.txt" | tail -14
  done
  ;;
final)
  for dev in gpu cpu; do
    CLFUSE_DEVICE=$dev timeout 120 python3 bench/half/check_rounding.py $B/tools/clfuse/clfuse > "$OUT/rounding_$dev.txt" 2>&1
    echo "== rounding on $dev"; cat "$OUT/rounding_$dev.txt"
  done
  for dt in f16 bf16; do
    for n in bench_pointwise bench_reductions; do
      CLFUSE_DEVICE=gpu timeout 120 $B/bench/$n --markdown --dtype $dt > "$OUT/${n}_${dt}_gpu.md" 2>> "$OUT/log.txt"
      echo "== $n $dt"; grep "^|" "$OUT/${n}_${dt}_gpu.md"
    done
  done
  for dt in float16 bfloat16; do
    PYTHONUNBUFFERED=1 timeout 150 python3 .gpu/torch_anchors.py cuda $dt > "$OUT/torch_$dt.txt" 2>&1
    echo "== torch $dt"; grep -v Warn "$OUT/torch_$dt.txt" | tail -12
  done
  X=/tmp/f16-fx
  PYTHONUNBUFFERED=1 timeout 200 python3 tests/models/make_fixtures.py --dtype f16 --inputs ids --outdir $X \
    --threads 16 > "$OUT/export_f16.log" 2>&1
  tail -5 "$OUT/export_f16.log"
  tar czf "$OUT/f16_fixtures.tgz" -C $X . && ls -la "$OUT/f16_fixtures.tgz"
  ;;
pocl)
  for dt in f16 f32; do
    for n in bench_pointwise bench_reductions; do
      CLFUSE_DEVICE=cpu timeout 250 $B/bench/$n --markdown --dtype $dt > "$OUT/${n}_${dt}_pocl.md" 2>> "$OUT/log.txt"
      echo "== $n $dt pocl"; cat "$OUT/${n}_${dt}_pocl.md"
    done
  done
  ;;
esac
