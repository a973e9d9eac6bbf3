#!/usr/bin/env bash
# GEMM diagnostics on the GPU machine (carry .gpu): the gemm suite's
# failures in full, the driver's register report for the default tiling
# (-cl-nv-verbose), and gemm_epilogue under extra build options (register
# caps, template overrides such as -DGROUP_M=16), each on a fresh cache.
#     bash bench/gemm_probe_gpu.sh ["options" ...]
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache
B=/tmp/build-gpu
if ! { meson setup $B -Dtests=true --buildtype=release --wrap-mode=nodownload && ninja -C $B; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
cat .gpu/commit 2>/dev/null
CLFUSE_CACHE_DIR=/tmp/c0 CLFUSE_DEVICE=gpu CK_VERBOSITY=normal timeout 300 $B/tests/test_gemm > "$OUT/test_gemm_gpu.txt" 2>&1
grep -E ":F:|:E:|Checks" "$OUT/test_gemm_gpu.txt"
CLFUSE_CACHE_DIR=/tmp/c1 CLFUSE_DEVICE=gpu CLFUSE_BUILD_OPTIONS=-cl-nv-verbose CLFUSE_LOGS=perf \
  $B/bench/bench_gemm --only gemm_epilogue --runs 3 > "$OUT/nv_verbose.txt" 2>&1
grep -E "ptxas|registers|spill|^gemm" "$OUT/nv_verbose.txt" | head -20
i=0
for o in "$@"; do
  i=$((i + 1))
  printf '%-40s ' "$o"
  CLFUSE_CACHE_DIR=/tmp/cv$i CLFUSE_DEVICE=gpu CLFUSE_BUILD_OPTIONS="$o" $B/bench/bench_gemm --only gemm_epilogue --runs 10 2>&1 | grep -E "^gemm_epilogue|wrong"
done
