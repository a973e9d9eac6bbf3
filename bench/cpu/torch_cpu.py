"""PyTorch's CPU figures for the cases of shared BENCH.md at their CPU sizes,
beside libclfuse's benchmarks on PoCL in the same call
(bench/run_cpu_pocl.sh): gemm_epilogue relu(x @ w + b) at 1024^3 and mlp
x + (gelu(x @ w1 + b1) @ w2 + b2) at M=1024, d=512, ff=2048 (--cases gemm,
the default), and with --cases memory the memory-bound ones: chain
relu(a*b + c) over 2^24, rowsum, softmax, layernorm, rmsnorm, horizontal
over 1024 x 16384, softmax_short over 16384 x 256, tiny (20 pointwise ops
on 1024 floats). f32, eager and torch.compile, every core (torch's default
threads unless OMP_NUM_THREADS). torch allocates its outputs on every call.
Prints one line per case and mode: median and minimum ms over --iters
calls after --warmup, and GFLOP/s (GEMMs) or GB/s of the minimum bytes
(memory-bound cases) of the median."""
import argparse

import torch

from cpu_timing import timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--cases", default="gemm", help="gemm, memory or all")
    a = ap.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.rand(*s, generator=g) * 2 - 1
    n = 1024
    x, w, b = r(n, n), r(n, n), r(n)
    m, d, ff = 1024, 512, 2048
    xm, w1, b1, w2, b2 = r(m, d), r(d, ff), r(ff), r(ff, d), r(d)
    F = torch.nn.functional
    cases = {}  # name: (fn, flops or None, bytes or None)
    if a.cases in ("gemm", "all"):
        cases["gemm_epilogue"] = (lambda: torch.relu(x @ w + b), 2.0 * n * n * n, None)
        cases["mlp"] = (lambda: xm + (F.gelu(xm @ w1 + b1) @ w2 + b2), 2.0 * 2 * m * d * ff, None)
    if a.cases in ("memory", "all"):
        e = 1 << 24
        ca, cb, cc = r(e), r(e), r(e)
        R, C = 1024, 16384
        ra, rb, rc = r(R, C), r(R, C), r(R, C)
        lw, lb = r(C), r(C)
        sx = r(16384, 256)
        t = r(1024)

        def tiny():
            y = t
            for i in range(20):
                y = torch.relu(y) if i % 2 else y * 1.0001 + 0.5
            return y

        cases["chain"] = (lambda: torch.relu(ca * cb + cc), None, 16.0 * e)
        cases["rowsum"] = (lambda: (ra * rb + rc).sum(-1), None, 12.0 * R * C)
        cases["softmax"] = (lambda: torch.softmax(ra, -1), None, 8.0 * R * C)
        cases["softmax_short"] = (lambda: torch.softmax(sx, -1), None, 8.0 * sx.numel())
        cases["layernorm"] = (lambda: F.layer_norm(ra, (C,), lw, lb, 1e-5), None, 8.0 * R * C)
        cases["rmsnorm"] = (lambda: ra * torch.rsqrt((ra * ra).mean(-1, keepdim=True) + 1e-5) * lw, None, 8.0 * R * C)
        cases["horizontal"] = (lambda: (ra.mean(-1), (ra * ra).mean(-1)), None, 4.0 * R * C)
        cases["tiny"] = (tiny, None, None)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, (fn, flops, nbytes) in cases.items():
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
            rate = (f" ({flops / med / 1e6:.0f} GFLOP/s)" if flops else
                    f" ({nbytes / med / 1e6:.0f} GB/s)" if nbytes else "")
            print(f"torch {mode} {name}: median {med:.3f} ms min {mn:.3f} ms{rate}", flush=True)


if __name__ == "__main__":
    main()
