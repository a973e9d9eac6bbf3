#!/usr/bin/env bash
# Issue 20 on a CPU device through PoCL: small kernels on the whole device
# against a sub-device of one compute unit (bench/probes/small_kernels_
# subdevice.c), and the Llama fixture's cold compile with a program per
# source (CLFUSE_ONE_PROGRAM=0) and one program per graph (=1), twice each.
#     bash bench/cpu_launch_and_cold.sh BUILD_DIR
# On the GPU machine source .gpu/env.sh first.
set -uo pipefail
B=${1:?usage: cpu_launch_and_cold.sh BUILD_DIR}
d=tests/models/llama_torchscript_ids
# shellcheck disable=SC2046  # pkg-config output is a list of flags
if gcc -O2 -std=c11 -o /tmp/small_kernels bench/probes/small_kernels_subdevice.c \
  $(pkg-config --cflags --libs OpenCL) 2> /tmp/sk-gcc.txt; then
  POCL_CACHE_DIR=/tmp/sk-pocl /tmp/small_kernels
else
  echo "(probe not built)"; tail -3 /tmp/sk-gcc.txt
fi
for one in 0 1 0 1; do
  rm -rf /tmp/clc-clf /tmp/clc-pocl
  t0=$(date +%s.%N)
  CLFUSE_DEVICE=cpu CLFUSE_ONE_PROGRAM=$one CLFUSE_CACHE_DIR=/tmp/clc-clf POCL_CACHE_DIR=/tmp/clc-pocl \
    CLFUSE_LOGS=cache "$B/tools/clfuse/clfuse" bench $d/model.onnx --runs 1 --fused-only > /tmp/clc.log 2>&1
  rc=$?
  wall=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  echo "cold compile cpu one_program $one: wall $wall s (load, compile, one run), rc $rc"
  grep -E "compile|first" /tmp/clc.log | tail -3
done
