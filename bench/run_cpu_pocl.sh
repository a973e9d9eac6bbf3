#!/usr/bin/env bash
# CPU devices at full speed (issue 20) on the GPU machine's 16 cores: libclfuse
# on PoCL (CLFUSE_DEVICE=cpu) against PyTorch on the same CPU in one call.
#     bash bench/run_cpu_pocl.sh        (device tool, carry .gpu)
# bench_gemm (gemm_epilogue 1024^3, mlp) with the default CPU tiling and
# autotuned, bench_pointwise and bench_reductions (the copy roofline a copy
# kernel over every core), bench/cpu/torch_cpu.py (eager and torch.compile).
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
if ! { [ -f $B/build.ninja ] || meson setup $B -Dtests=false --buildtype=release --wrap-mode=nodownload; } \
       > "$OUT/build.log" 2>&1 || ! timeout 300 ninja -C $B bench/bench_gemm bench/bench_pointwise \
       bench/bench_reductions >> "$OUT/build.log" 2>&1; then
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
run "bench_gemm default tiling" 150 $B/bench/bench_gemm --runs 20
run "bench_gemm default tiling, again" 150 $B/bench/bench_gemm --runs 20
CLFUSE_AUTOTUNE=1 run "bench_gemm autotuned" 200 $B/bench/bench_gemm --runs 20
run "bench_pointwise" 120 $B/bench/bench_pointwise --runs 10
run "bench_reductions" 150 $B/bench/bench_reductions --runs 10
echo "== torch ($((SECONDS - START)) s)" >> "$R"
timeout 240 python3 bench/cpu/torch_cpu.py --iters 50 --warmup 5 >> "$R" 2>&1 || echo "(torch exit $?)" >> "$R"
echo "== done ($((SECONDS - START)) s)" >> "$R"
grep -E "^(==|gemm_epilogue|mlp|torch|copy roofline|\(exit)" "$R"
