#!/usr/bin/env bash
# Runs red_probe (row-reduction kernel shapes) on the GPU machine: the long
# rows of BENCH.md's softmax/layernorm (4096 x 16384) and the short rows of
# softmax_short (65536 x 256), each variant against the copy roofline of the
# same run. Carry .gpu; results go to $OUT/red_probe.md.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
gcc -O2 -std=c11 -o /tmp/red_probe bench/probes/red_probe.c -lOpenCL -lm || exit 1
{
cat .gpu/commit 2>/dev/null
/tmp/red_probe 4096 16384 \
  "-DLANES=1024 -DWG=1024 -DVEC=1 -DCACHED=1 -DTREE=0" \
  "-DLANES=1024 -DWG=1024 -DVEC=1 -DCACHED=1 -DTREE=1" \
  "-DLANES=1024 -DWG=1024 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=1024 -DWG=1024 -DVEC=4 -DCACHED=0 -DTREE=1" \
  "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=0 -DTREE=1" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1" \
  "-DLANES=128 -DWG=128 -DVEC=4 -DCACHED=0 -DTREE=1" \
  "-DLANES=256 -DWG=256 -DVEC=1 -DCACHED=0 -DTREE=1" \
  "-DLANES=1024 -DWG=1024 -DVEC=1 -DCACHED=0 -DTREE=1" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=0" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1 -DF=8" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1 -DONLINE=1" \
  "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=0 -DTREE=1 -DONLINE=1" \
  "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=3" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=3" \
  "-DLANES=1024 -DWG=1024 -DVEC=4 -DCACHED=1 -DTREE=3" \
  "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=2" \
  "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=2"
/tmp/red_probe 65536 256 \
  "-DLANES=256 -DWG=256 -DVEC=1 -DCACHED=1 -DTREE=0" \
  "-DLANES=64 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=64 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=0" \
  "-DLANES=32 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=16 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=8 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=32 -DWG=128 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=32 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=64 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=1" \
  "-DLANES=32 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1" \
  "-DLANES=32 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=3" \
  "-DLANES=64 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=3" \
  "-DLANES=32 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=2"
} 2>&1 | tee "$OUT/red_probe.md"
