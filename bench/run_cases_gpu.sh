#!/usr/bin/env bash
# Test suites on the GPU machine with their cases in parallel (one call of
# the device tool; carry .gpu): each Check case (a TCase added by
# clf_test_add_case or clf_test_add_variant_case in tests/test_SUITE.c)
# runs as a process of its own (CK_RUN_CASE), JOBS at a time (default 8),
# on NVIDIA's driver (CLFUSE_DEVICE=gpu; a test that asks for PoCL by name
# gets it), so that a suite whose cases take minutes each (attention) takes
# about as long as its longest case instead of their sum:
#     bash bench/run_cases_gpu.sh attention [SUITE...]
# Builds with tests in $B (release; default /tmp/build-gpu-tests, reused
# if there). Each case's output lands in $OUT/cases/SUITE.CASE.txt; a line
# a case and a summary (cases passed, failed) are printed. Exits 1 if any
# case failed or timed out (CASE_TIMEOUT seconds, default 400). CASES_DEVICE
# (default gpu) names another device for a try elsewhere; CASES_MATCH (an
# extended regular expression) runs the cases whose names match it only.
set -uo pipefail
START=$SECONDS
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT/cases"
B=${B:-/tmp/build-gpu-tests}
proto=/tmp/gpu-root/usr/include/onnx/onnx.proto
[ -f "$proto" ] || proto=/usr/include/onnx/onnx.proto
# (a build another script set up without tests is given them)
if ! { { [ -f $B/build.ninja ] && meson configure $B -Dtests=true || meson setup $B -Dtests=true \
         --buildtype=release --wrap-mode=nodownload -Donnx_proto=$proto; } && ninja -C $B; } > "$OUT/build_tests.log" 2>&1; then
  tail -40 "$OUT/build_tests.log"; exit 1
fi
echo "built in $((SECONDS - START)) s"
export CLFUSE_DEVICE=${CASES_DEVICE:-gpu} CLFUSE_TEST_SOURCE_DIR=$PWD/tests CK_DEFAULT_TIMEOUT=600 B OUT
run_case() { # suite case
  local t=${CASE_TIMEOUT:-400} s=$SECONDS
  CK_RUN_CASE=$2 POCL_CACHE_DIR=/tmp/pocl-cases/$1.$2 CLFUSE_CACHE_DIR=/tmp/cc-cases/$1.$2 \
    timeout "$t" "$B/tests/test_$1" > "$OUT/cases/$1.$2.txt" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && grep -q "^100%: Checks: 1, Failures: 0, Errors: 0" "$OUT/cases/$1.$2.txt"; then
    echo "ok   $1 $2 ($((SECONDS - s)) s)"
  else
    echo "FAIL $1 $2 (rc $rc, $((SECONDS - s)) s): $(grep -E ':[EF]:' "$OUT/cases/$1.$2.txt" | head -1 | cut -c1-200)"
  fi
}
export -f run_case
for suite in "$@"; do
  grep -o 'clf_test_add_\(variant_\)\?case(s, "[a-z_0-9]*"' "tests/test_$suite.c" | sed 's/.*"\(.*\)"/\1/' |
    grep -E "${CASES_MATCH:-.}" | sed "s/^/$suite /" | xargs -P "${JOBS:-8}" -L 1 bash -c 'run_case "$0" "$1"'
done | tee "$OUT/cases.txt"
ok=$(grep -c "^ok " "$OUT/cases.txt"); bad=$(grep -c "^FAIL " "$OUT/cases.txt")
echo "cases: $ok passed, $bad failed ($((SECONDS - START)) s)"
[ "$bad" -eq 0 ]
