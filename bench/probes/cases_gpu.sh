#!/usr/bin/env bash
# Times generated kernels and hand-edited variants of them one kernel at a
# time with cl_kernel_info, on the GPU machine (carry .gpu): GPU reduction
# variants (bench/probes/case_variants.py) of softmax over 4096 x 16384 and
# 65536 x 256 and horizontal over 4096 x 16384, and GEMM ablations
# (bench/probes/gemm_ablations.py) of relu(x @ w + b) at 4096^3.
# CASES="softmax 65536 256,gemm 4096 4096" picks some; PASSES=N repeats the
# timing loop; GEMM_OPTS="-cl-nv-maxrregcount 128;-DX=1" also builds the
# GEMM kernels with each of those option strings. Results in $OUT/cases.txt, program binaries
# (PTX on NVIDIA) in $OUT/bin.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
B=/tmp/build-probes
W=/tmp/probe-cases
mkdir -p "$OUT/bin" "$W"
{ meson setup $B -Dtests=false --buildtype=release --wrap-mode=nodownload && ninja -C $B; } > "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
gcc -O2 -std=c11 -Iinclude -o /tmp/kernel_source bench/probes/kernel_source.c -L$B -lclfuse -Wl,-rpath,$B || exit 1
gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
export CLFUSE_CACHE=0 CLFUSE_DEVICE=gpu RUNS=${RUNS:-51}
CASES=${CASES:-"softmax 4096 16384,softmax 65536 256,horizontal 4096 16384,gemm 4096 4096"}
IFS=, read -ra cases <<< "$CASES"
for c in "${cases[@]}"; do
  set -- $c
  gen=bench/probes/case_variants.py
  [ "$1" = gemm ] && gen=bench/probes/gemm_ablations.py
  /tmp/kernel_source $1 $2 $3 > "$W/$1_$3.cl" && python3 $gen "$W/$1_$3.cl" "$W/$1_$3"
done
cat .gpu/commit 2>/dev/null | tee "$OUT/cases.txt"
for pass in $(seq ${PASSES:-1}); do for f in "$W"/*/*.cl; do
  def() { grep -m1 "#define $1 " "$f" | awk '{print $3}' | tr -d u; }
  nbuf=$(grep -m1 "^#define CLF_PARAMS " "$f" | grep -o "__global" | wc -l)
  opts=(-cl-nv-verbose)
  if [ -n "$(def TM)" ]; then
    IFS=';' read -ra more <<< "${GEMM_OPTS:-}"
    for o in "${more[@]}"; do opts+=("-cl-nv-verbose $o"); done
    wg=$(( ($(def TM) / $(def WM)) * ($(def TN) / $(def WN)) ))
    launch="$(( $(def M) / $(def TM) * ($(def N) / $(def TN)) * wg )) $wg $nbuf $(( $(def M) * $(def K) * 4 )) $(( $(def M) * $(def N) ))"
  else
    rlen=$(def RLEN) lanes=$(def LANES) wg=$(def WG)
    case $(basename "$(dirname "$f")") in softmax_16384|horizontal_16384) rows=4096 ;; *) rows=65536 ;; esac
    groups=$((rows / (wg / lanes)))
    grid=$(grep -m1 -o "GRID_GROUPS [0-9]*" "$f" | awk '{print $2}')
    [ -n "$grid" ] && groups=$grid
    launch="$((groups * wg)) $wg $nbuf $((rows * rlen * 4)) $rows"
  fi
  printf '%-45s %s\n' "$(basename "$f")" "$(LAUNCH="$launch" BINARY="$OUT/bin/$(basename "$f" .cl).ptx" \
    /tmp/cki "$f" "${opts[@]}" 2>&1 | grep -E 'Used|median|launch' | sed 's/ptxas info    : //' | tr '\n' ' ')" | tee -a "$OUT/cases.txt"
done; done
