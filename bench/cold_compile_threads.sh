#!/usr/bin/env bash
# Issue 20's cold compile: the Llama fixture compiled with empty caches
# (libclfuse's, PoCL's) with its programs built one at a time
# (CLFUSE_BUILD_THREADS=1) and in threads, on each device named, and
# bench/probes/program_shapes on the same sources (how a driver's build
# time splits between its fixed part and each kernel).
#     bash bench/cold_compile_threads.sh BUILD_DIR [DEVICE ...]   (default: cpu)
# A DEVICE is as CLFUSE_DEVICE takes it (gpu, cpu, llvmpipe). On the GPU
# machine source .gpu/env.sh first. Prints one line per compile.
set -uo pipefail
B=${1:?usage: cold_compile_threads.sh BUILD_DIR [DEVICE ...]}
shift
devices=("$@"); [ ${#devices[@]} -gt 0 ] || devices=(cpu)
d=tests/models/llama_torchscript_ids
cores=$(nproc)
export MESA_SHADER_CACHE_DISABLE=true  # rusticl's own cache would make a cold compile warm
rm -f /tmp/program_shapes
# shellcheck disable=SC2046  # pkg-config output is a list of flags
gcc -O2 -std=c11 -o /tmp/program_shapes bench/probes/program_shapes.c $(pkg-config --cflags --libs OpenCL) \
  2> /tmp/cct-gcc.txt ||
  { echo "(probe not built)"; tail -3 /tmp/cct-gcc.txt; }
for dev in "${devices[@]}"; do
  CLFUSE_DEVICE=$dev "$B/tools/clfuse/clfuse" code $d/model.onnx > /tmp/cct-code.txt
  for t in 1 "$cores" 1 "$cores"; do
    rm -rf /tmp/cct-clf /tmp/cct-pocl
    t0=$(date +%s.%N)
    CLFUSE_DEVICE=$dev CLFUSE_BUILD_THREADS=$t CLFUSE_CACHE_DIR=/tmp/cct-clf POCL_CACHE_DIR=/tmp/cct-pocl \
      CLFUSE_LOGS=cache "$B/tools/clfuse/clfuse" bench $d/model.onnx --runs 1 --fused-only > /tmp/cct.log 2>&1
    rc=$?
    wall=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
    builds=$(grep -c "): built in" /tmp/cct.log)
    echo "cold compile $dev threads $t: wall $wall s (load, compile, one run), $builds programs built, rc $rc"
  done
  if [ -x /tmp/program_shapes ] && [ "$dev" != llvmpipe ]; then  # the probe takes the GPU or PoCL
    rm -rf /tmp/cct-pocl
    probe_cpu=; [ "$dev" = cpu ] && probe_cpu=1
    POCL_CACHE_DIR=/tmp/cct-pocl CLFUSE_PROBE_CPU=$probe_cpu /tmp/program_shapes /tmp/cct-code.txt | grep -v "^  source"
  fi
done
