#!/usr/bin/env bash
# GEMM work on the GPU machine in one device call (carry .gpu): builds, runs
# the gemm test suite on the GPU, bench_gemm (default tiling, then
# autotuned), a sweep of tilings, and PyTorch's anchors for the two GEMM
# cases, in that order. Results land in $OUT.
#     bash bench/run_gpu_gemm.sh [tm,tn,tk,wm,wn ...]
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=/tmp/build-gpu
if ! { meson setup $B -Dtests=true --buildtype=release --wrap-mode=nodownload && ninja -C $B; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; cat .gpu/commit 2>/dev/null; } | tee "$OUT/log.txt"
CLFUSE_DEVICE=gpu timeout 200 meson test -C $B --suite gemm --print-errorlogs > "$OUT/tests_gemm_gpu.txt" 2>&1
grep -E "^ *[0-9]+/[0-9]+ .*(OK|FAIL|TIMEOUT)" "$OUT/tests_gemm_gpu.txt"
CLFUSE_DEVICE=gpu $B/bench/bench_gemm --markdown > "$OUT/bench_gemm_gpu.md" 2>> "$OUT/log.txt"; cat "$OUT/bench_gemm_gpu.md"
CLFUSE_DEVICE=gpu $B/bench/bench_gemm --markdown --autotune > "$OUT/bench_gemm_gpu_autotuned.md" 2>> "$OUT/log.txt"; cat "$OUT/bench_gemm_gpu_autotuned.md"
CLFUSE_DEVICE=gpu bash bench/gemm_tile_sweep.sh $B "$@" | tee "$OUT/gemm_tile_sweep_gpu.txt"
cat > /tmp/anchors.py <<'PY'
import sys, torch, torch.nn.functional as Fn
from triton.testing import do_bench
torch.backends.cuda.matmul.allow_tf32 = False
r = lambda *s: torch.randn(*s, device="cuda")
gm = 4096; M, D, FF = 8192, 1024, 4096
gx, gw, gb = r(gm, gm), r(gm, gm), r(gm)
mx, w1, b1, w2, b2 = r(M, D), r(D, FF) * 0.03, r(FF), r(FF, D) * 0.03, r(D)
for name, f, fl in [("gemm_epilogue", lambda: torch.relu(gx @ gw + gb), 2 * gm ** 3),
                    ("gemm_alone", lambda: gx @ gw, 2 * gm ** 3),
                    ("mlp", lambda: mx + (Fn.gelu(mx @ w1 + b1) @ w2 + b2), 4 * M * D * FF)]:
    te = do_bench(f, warmup=50, rep=200, return_mode="median")
    fc = torch.compile(f); fc(); fc()
    tc = do_bench(fc, warmup=50, rep=200, return_mode="median")
    print(f"torch {name:14s} eager {te:.3f} ms  compile {tc:.3f} ms  ({fl / tc / 1e9:.1f} TFLOP/s compiled)", flush=True)
PY
PYTHONUNBUFFERED=1 timeout 240 python3 /tmp/anchors.py 2>&1 | grep -v Warning | tee -a "$OUT/log.txt"
