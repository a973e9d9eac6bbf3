#!/usr/bin/env bash
# The tiny TorchScript fixtures and generate_kv on this machine's PoCL, two
# builds of libclfuse run alternately, ONNX Runtime (CPU provider, every
# core) in the same rounds:
#     bash bench/cpu/tiny_ab_pocl.sh BASE_BUILD HEAD_BUILD [ROUNDS] [PYTHON]
# BASE_BUILD and HEAD_BUILD are build directories (tools/clfuse/clfuse and
# examples/generate_kv in each); PYTHON has onnxruntime (default python3).
# Prints one line per build, model and round: clfuse bench's fused line
# (kernels ... wall ms, back-to-back ms), generate_kv's new-length and
# seen-length medians, and ONNX Runtime's ms per model.
set -uo pipefail
base=$1 head=$2 rounds=${3:-3} py=${4:-python3}
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-/tmp/pocl-ab}
for r in $(seq "$rounds"); do
  for b in "base=$base" "head=$head"; do
    name=${b%%=*} dir=${b#*=}
    for m in llama gpt2 bert; do
      CLFUSE_CACHE_DIR=/tmp/clfuse-ab-$name "$dir/tools/clfuse/clfuse" bench \
        tests/models/${m}_torchscript_ids/model.onnx --runs 300 2>&1 |
        grep -E '^fused ' | sed "s/^/$r $name $m /"
    done
    CLFUSE_CACHE_DIR=/tmp/clfuse-ab-$name "$dir/examples/generate_kv" tests/models/llama_torchscript_kv/model.onnx \
      --prompt 1,2,3,4 --steps 60 --max-len 70 2>&1 |
      grep -oE 'later new lengths [0-9.]+ ms|again [0-9.]+ ms' | tr '\n' ' ' | sed "s/^/$r $name generate_kv /"
    echo
  done
  "$py" bench/models/bench_models.py --no-torch 2>/dev/null | sed "s/^/$r onnxruntime /"
done
