"""PyTorch's CPU figures for the GEMM cases of shared BENCH.md at their CPU
sizes, beside libclfuse's bench_gemm on PoCL in the same call
(bench/run_cpu_pocl.sh): gemm_epilogue relu(x @ w + b) at 1024^3 and mlp
x + (gelu(x @ w1 + b1) @ w2 + b2) at M=1024, d=512, ff=2048, f32, eager and
torch.compile, every core (torch's default threads unless OMP_NUM_THREADS).
Prints one line per case and mode: median and minimum ms over --iters
calls after --warmup, and GFLOP/s of the median."""
import argparse
import statistics
import time

import torch


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t), min(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.rand(*s, generator=g) * 2 - 1
    n = 1024
    x, w, b = r(n, n), r(n, n), r(n)
    m, d, ff = 1024, 512, 2048
    xm, w1, b1, w2, b2 = r(m, d), r(d, ff), r(ff), r(ff, d), r(d)
    cases = {
        "gemm_epilogue": (lambda: torch.relu(x @ w + b), 2.0 * n * n * n),
        "mlp": (lambda: xm + (torch.nn.functional.gelu(xm @ w1 + b1) @ w2 + b2), 2.0 * 2 * m * d * ff),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, (fn, flops) in cases.items():
        modes = [("eager", fn)]
        if not a.no_compile:
            modes.append(("compile", torch.compile(fn)))
        for mode, f in modes:
            with torch.no_grad():
                try:
                    med, mn = timed(f, a.iters, a.warmup)
                except Exception as e:  # torch.compile needs a C++ compiler
                    print(f"torch {mode} {name}: failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
            print(f"torch {mode} {name}: median {med:.3f} ms min {mn:.3f} ms "
                  f"({flops / med / 1e6:.0f} GFLOP/s)", flush=True)


if __name__ == "__main__":
    main()
