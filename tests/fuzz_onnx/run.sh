#!/usr/bin/env bash
# Builds the libFuzzer target over the ONNX loader (fuzz_onnx_load.c) with
# clang, -fsanitize=fuzzer,address,undefined, and runs it for a bounded time
# on a seed corpus of the repository's models.
#
#   tests/fuzz_onnx/run.sh [SECONDS] [libFuzzer options...]
#
# SECONDS: how long to fuzz (default 120; 0 builds only). Extra arguments go
# to libFuzzer after the defaults (a later -flag=value wins), e.g.
#   tests/fuzz_onnx/run.sh 600 -rss_limit_mb=4096
# To replay a file (a saved crash): tests/fuzz_onnx/run.sh 0 && \
#   build-fuzz-onnx/fuzz_onnx_load tests/fuzz_onnx/crashes/FILE
#
# Environment: FUZZ_BUILDDIR (default build-fuzz-onnx at the repository root;
# a meson build of the library as a static archive, clang, ASan+UBSan, with
# libFuzzer's coverage instrumentation), FUZZ_CORPUS (a corpus folder to keep
# and grow; default a temporary one, seeded each run), FUZZ_ARTIFACTS (where
# crash-*, leak-*, timeout-* and oom-* inputs are written; default
# FUZZ_BUILDDIR/artifacts), CC (default clang).
#
# The seeds are copied at run time, never committed: tests/models/*/model.onnx,
# tests/onnx/*.onnx, tests/onnx/attention_op/*.onnx and tests/graphs/*.onnxtxt.
# Before fuzzing, every file of
# tests/fuzz_onnx/crashes (inputs that crashed the loader once) is replayed
# and must load or fail cleanly. Exits 0 when nothing was found; non-zero
# when a saved input still fails, on any crash, leak, timeout, out-of-memory
# or sanitizer report of the fuzzing (libFuzzer's exit status, or new files
# in the artifacts folder under -fork), or when the build fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/fuzz_onnx
seconds=${1:-120}
if (($#)); then shift; fi
builddir=${FUZZ_BUILDDIR:-$root/build-fuzz-onnx}
artifacts=${FUZZ_ARTIFACTS:-$builddir/artifacts}
cc=${CC:-clang}

if ! command -v "$cc" >/dev/null; then
  echo "fuzz_onnx: $cc not found: apt-get install clang libclang-rt-14-dev (tools/install-deps.sh)" >&2
  exit 2
fi

flags="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [[ ! -f $builddir/build.ninja ]]; then
  # Only the library is built (-Dtests=false; ninja is asked for the archive
  # alone); the examples, tools and benchmarks are configured, not built.
  CC=$cc meson setup "$builddir" "$root" --wrap-mode=nodownload -Dtests=false \
    -Ddefault_library=static -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized -Dc_args="$flags" >"$builddir.setup.log" 2>&1 ||
    { cat "$builddir.setup.log" >&2; exit 2; }
  rm -f "$builddir.setup.log"
fi
ninja -C "$builddir" libclfuse.a >/dev/null || { ninja -C "$builddir" libclfuse.a >&2 || true; exit 2; }

exe=$builddir/fuzz_onnx_load
if [[ ! -x $exe || $exe -ot $here/fuzz_onnx_load.c || $exe -ot $builddir/libclfuse.a ]]; then
  # shellcheck disable=SC2046,SC2086  # $flags and pkg-config's output are word lists
  "$cc" -std=c11 -O1 -g -Wall -Wextra -Werror $flags -fsanitize=fuzzer,address,undefined \
    -I"$root/include" -DCL_TARGET_OPENCL_VERSION=120 "$here/fuzz_onnx_load.c" "$builddir/libclfuse.a" \
    $(pkg-config --libs libprotobuf-c OpenCL) -lm -lpthread -o "$exe"
fi
((seconds > 0)) || exit 0

# The saved reproducers first: each must now load or fail cleanly (a
# failure is reported, and the run then fuzzes all the same).
replay=0
crashes=("$here"/crashes/*)
if [[ -e ${crashes[0]} ]]; then
  echo "fuzz_onnx: replaying ${#crashes[@]} saved inputs of tests/fuzz_onnx/crashes"
  CLF_FUZZ_BASE_DIR=$root/tests/onnx \
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    "$exe" "${crashes[@]}" >"$builddir/replay.log" 2>&1 || replay=$?
  if ((replay)); then
    grep -v '^Running: \|^Executed \|^INFO: ' "$builddir/replay.log" >&2 || true
    echo "fuzz_onnx: FAIL: a saved input of tests/fuzz_onnx/crashes still fails (exit $replay)" >&2
  fi
fi

corpus=${FUZZ_CORPUS:-}
tmp=
if [[ -z $corpus ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  corpus=$tmp/corpus
fi
mkdir -p "$corpus" "$artifacts"
n=0
for f in "$root"/tests/models/*/model.onnx "$root"/tests/onnx/*.onnx "$root"/tests/onnx/attention_op/*.onnx \
    "$root"/tests/graphs/*.onnxtxt; do
  [[ -f $f ]] || continue
  # Named by folder and file, so that the seeds do not overwrite each other.
  cp "$f" "$corpus/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
  n=$((n + 1))
done
echo "fuzz_onnx: $n seeds, $seconds s, artifacts in $artifacts"
before=$(find "$artifacts" -type f | wc -l)

# max_len: the largest seed (about 350 KB) must fit whole, or libFuzzer cuts
# the real models down to their first 4 KB. timeout: one input (three loads
# and at most a small reference run) takes milliseconds; 10 s is a hang.
# CLF_FUZZ_BASE_DIR: external data of mlp_external.onnx (mlp_external.bin).
# ASan's leak check runs after every input (libFuzzer's -detect_leaks=1).
CLF_FUZZ_BASE_DIR=$root/tests/onnx \
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
  "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 \
    -max_len=400000 -dict="$here/onnx.dict" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" "$corpus" || fuzz=$?
if ((${fuzz:-0})); then
  echo "fuzz_onnx: FAIL: libFuzzer found a problem (exit $fuzz): the input is in $artifacts" >&2
  exit "$fuzz"
fi
# With -fork and -ignore_crashes libFuzzer exits 0 past what it found.
after=$(find "$artifacts" -type f | wc -l)
if ((after > before)); then
  echo "fuzz_onnx: FAIL: $((after - before)) new inputs in $artifacts" >&2
  exit 1
fi
if ((replay)); then exit "$replay"; fi
echo "fuzz_onnx: nothing found in $seconds s"
