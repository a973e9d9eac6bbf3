#!/usr/bin/env bash
# Times generated GPU reduction kernels and hand-edited variants of them
# (bench/probes/case_variants.py) one kernel at a time with cl_kernel_info,
# on the GPU machine (carry .gpu): softmax over 4096 x 16384 and 65536 x 256,
# horizontal over 4096 x 16384. Results in $OUT/cases.txt.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
B=/tmp/build-probes
W=/tmp/probe-cases
mkdir -p "$OUT" "$W"
{ meson setup $B -Dtests=false --buildtype=release --wrap-mode=nodownload && ninja -C $B; } > "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
gcc -O2 -std=c11 -Iinclude -o /tmp/kernel_source bench/probes/kernel_source.c -L$B -lclfuse -Wl,-rpath,$B || exit 1
gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
export CLFUSE_CACHE=0 CLFUSE_DEVICE=gpu RUNS=${RUNS:-51}
for c in "softmax 4096 16384" "softmax 65536 256" "horizontal 4096 16384"; do
  set -- $c
  /tmp/kernel_source $1 $2 $3 > "$W/$1_$3.cl" && python3 bench/probes/case_variants.py "$W/$1_$3.cl" "$W/$1_$3"
done
cat .gpu/commit 2>/dev/null | tee "$OUT/cases.txt"
for f in "$W"/*/*.cl; do
  rlen=$(grep -m1 "#define RLEN" "$f" | awk '{print $3}' | tr -d u)
  lanes=$(grep -m1 "#define LANES" "$f" | awk '{print $3}')
  wg=$(grep -m1 "#define WG" "$f" | awk '{print $3}')
  case $(basename "$(dirname "$f")") in softmax_16384|horizontal_16384) rows=4096 ;; *) rows=65536 ;; esac
  nbuf=$(grep -m1 "^#define CLF_PARAMS " "$f" | grep -o "__global" | wc -l)
  printf '%-45s %s\n' "$(basename "$f")" "$(LAUNCH="$((rows / (wg / lanes) * wg)) $wg $nbuf $((rows * rlen * 4)) $rows" \
    /tmp/cki "$f" -cl-nv-verbose 2>&1 | grep -E 'Used|median|launch' | sed 's/ptxas info    : //' | tr '\n' ' ')" | tee -a "$OUT/cases.txt"
done
