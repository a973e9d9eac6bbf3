#!/bin/sh
# Runs oclgrind_families (every kernel template family on small shapes)
# under oclgrind with API, data-race and uninitialised-memory checks, and
# fails on any report: oclgrind itself exits 0 when it finds errors, so its
# log and stderr are read here. Exits 77 (skipped) when oclgrind is not
# installed.
#   run_oclgrind.sh PROGRAM
set -u
prog=$1
if ! command -v oclgrind >/dev/null 2>&1; then
  echo "oclgrind is not installed (apt-get install oclgrind): skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Under the oclgrind wrapper the Oclgrind platform is the only one the
# program sees; CLFUSE_DEVICE names it anyway so that a wrong device fails.
# -cl-opt-disable: Debian's oclgrind cannot interpret the
# llvm.experimental.noalias.scope.decl intrinsic that its clang emits when
# inlining at -O2 ("Undefined external function"), so kernels are built
# unoptimised for the simulator.
# Each case runs in a process of its own: in one process, buffers of an
# earlier executable that oclgrind reuses for a later one were reported as
# uninitialised reads although the results matched the reference (see
# NOTES.md).
# The oclgrind wrapper preloads its runtime, so in a sanitizer build ASan's
# runtime is no longer first in the library list: let it run anyway.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
export ASAN_OPTIONS
"$prog" --list >"$tmp/cases" || exit 1
failed=0
while IFS= read -r case; do
  OCLGRIND_BUILD_OPTIONS=-cl-opt-disable CLFUSE_DEVICE=Oclgrind \
    oclgrind --check-api --data-races --uninitialized --log "$tmp/oclgrind.log" \
    "$prog" Oclgrind "$case" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  grep -v '^device:' "$tmp/out"
  cat "$tmp/err" >&2
  if [ -s "$tmp/oclgrind.log" ]; then
    echo "$case: oclgrind reported errors (first 80 lines):"
    head -n 80 "$tmp/oclgrind.log"
    failed=1
  elif grep -qiE "oclgrind|invalid (read|write)|uninitiali[sz]ed|data race|runtime error" "$tmp/err"; then
    echo "$case: oclgrind reported errors on stderr"
    failed=1
  elif [ "$rc" -ne 0 ]; then
    echo "$case: oclgrind_families failed (exit $rc)"
    failed=1
  fi
  rm -f "$tmp/oclgrind.log"
done <"$tmp/cases"
[ "$failed" -eq 0 ] && echo "oclgrind: no reports in $(wc -l <"$tmp/cases") cases"
exit "$failed"
