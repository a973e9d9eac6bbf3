#!/usr/bin/env bash
# Runs gemv_probe (one-row f16 products on the decoder's shapes, several
# kernel shapes) on the GPU machine, and the same products through PyTorch
# (cuBLAS) in the same call. Carry .gpu; results in $OUT/gemv_probe.md.
# Extra arguments replace the built-in variants.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
gcc -O2 -std=c11 -o /tmp/gemv_probe bench/probes/gemv_probe.c -lOpenCL -lm || exit 1
timeout 400 /tmp/gemv_probe "$@" | tee "$OUT/gemv_probe.md"
timeout 120 python3 - <<'PY' | tee -a "$OUT/gemv_probe.md"
import torch
from triton.testing import do_bench
for K, N in ((2048, 512), (2048, 2048), (2048, 8192), (8192, 2048)):
    x = torch.randn(1, K, device="cuda", dtype=torch.float16)
    w = torch.randn(K, N, device="cuda", dtype=torch.float16)
    wt = w.t().contiguous()
    ms = do_bench(lambda: x @ w, warmup=50, rep=300)
    mt = do_bench(lambda: torch.nn.functional.linear(x, wt), warmup=50, rep=300)
    print(f"torch {K}x{N}: x @ w {ms:.4f} ms ({K*N*2/ms/1e6:.0f} GB/s), linear(x, w^T) {mt:.4f} ms ({K*N*2/mt/1e6:.0f} GB/s)")
PY
