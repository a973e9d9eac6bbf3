"""PyTorch's side of bench/bench_attention.c on CUDA (or, with --device cpu,
on the CPU): the same attention cases, softmax(q @ kT * scale + mask) @ v,
through

  sdpa     torch.nn.functional.scaled_dot_product_attention (is_causal when
           Sq == Sk, else a bottom-right boolean mask; GQA with enable_gqa,
           or repeat_interleave inside the timed call where that is missing)
  compile  torch.compile of the explicit graph: k and v broadcast to H heads
           (unsqueeze, expand, reshape), matmul, mul by the scale, where
           against the causal mask, softmax, matmul

timed with CUDA events around each call (on the CPU: the host's
perf_counter around each call, torch's own threads, torch.get_num_threads()
printed): the median and minimum of --iters calls after --warmup, inputs uniform in [-2, 2) rotated among as many copies
as bench_attention uses (one pass over them exceeds 256 MiB). f32 is f32:
torch.backends.cuda.matmul.allow_tf32 (and cuDNN's) are off. Each result is also compared, on batch 0, with the
explicit graph in float64.

    python3 torch_attention.py [--device cuda|cpu] [--iters N] [--warmup W] --case NAME "OPTIONS" [--case NAME "OPTIONS" ...]

OPTIONS are bench_attention's (--dtype f32|f16|bf16 --b --h --hkv --sq --sk
--s --d --dv --scale --causal; the others are ignored). A line
"RESULT case=NAME impl=sdpa|compile ok=1 median_ms=... min_ms=..." is
printed (and flushed) per case and implementation, ok=0 with why= on a
failure, which does not stop the other cases."""
import argparse
import math
import shlex
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

# f32 is f32: matmuls (and cuDNN) without TF32. Only the legacy flags are set
# (as shared BENCH.md asks): torch >= 2.9 warns that they are deprecated, and
# mixing them with the new fp32_precision settings makes reading them raise.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEV = "cuda"  # --device


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def parse_case(text):
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    for n, d in (("b", 1), ("h", 2), ("hkv", 0), ("sq", 0), ("sk", 0), ("s", 0), ("d", 32), ("dv", 0)):
        p.add_argument("--" + n, type=int, default=d)
    p.add_argument("--scale", type=float, default=0.0)
    p.add_argument("--causal", action="store_true")
    c, _ = p.parse_known_args(shlex.split(text))  # bench_attention's own options are ignored
    c.sq = c.sq or c.s or 64
    c.sk = c.sk or c.s or 64
    c.hkv = c.hkv or c.h
    c.dv = c.dv or c.d
    c.scale = c.scale or 1.0 / math.sqrt(c.d)
    if c.h % c.hkv:
        raise ValueError("H must be a multiple of Hkv")
    return c


def case_bytes(c):
    e = {"f32": 4, "f16": 2, "bf16": 2}[c.dtype]
    return e * (c.b * c.h * c.sq * (c.d + c.dv) + c.b * c.hkv * c.sk * (c.d + c.dv))


def case_flops(c):
    f = 2.0 * c.b * c.h * c.sq * c.sk * (c.d + c.dv)
    return f / 2 if c.causal and c.sq == c.sk else f


def causal_mask(c):
    """True where query i sees key j: j <= i + Sk - Sq (bottom right)."""
    i = torch.arange(c.sq, device=DEV)[:, None]
    j = torch.arange(c.sk, device=DEV)[None, :]
    return j <= i + (c.sk - c.sq)


def to_heads(x, h):
    b, hkv, s, e = x.shape
    if hkv == h:
        return x
    return x.unsqueeze(2).expand(b, hkv, h // hkv, s, e).reshape(b, h, s, e)


def make_explicit(c):
    scale, h = c.scale, c.h

    def explicit(q, k, v, mask):
        k, v = to_heads(k, h), to_heads(v, h)
        s = torch.matmul(q, k.transpose(-2, -1)) * scale
        if mask is not None:
            s = torch.where(mask, s, float("-inf"))
        return torch.matmul(torch.softmax(s, dim=-1), v)

    return explicit


def make_sdpa(c):
    gqa = c.hkv < c.h
    is_causal = c.causal and c.sq == c.sk
    note = "is_causal" if is_causal else ("bottom-right bool mask" if c.causal else "")
    kw = dict(is_causal=is_causal, scale=c.scale)

    def sdpa(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)

    def sdpa_repeat(q, k, v, mask):
        r = c.h // c.hkv
        k, v = k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)

    if not gqa:
        return sdpa, note
    try:
        q = torch.zeros(1, c.h, 2, c.d, device=DEV, dtype=DTYPES[c.dtype])
        k = torch.zeros(1, c.hkv, 2, c.d, device=DEV, dtype=DTYPES[c.dtype])
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        kw["enable_gqa"] = True
        return sdpa, (note + " enable_gqa").strip()
    except (TypeError, RuntimeError):
        return sdpa_repeat, (note + " repeat_interleave in the call").strip()


def cuda_kernels(fn, args):
    """The names of the CUDA kernels one call launches (the profiler's);
    none on the CPU."""
    if DEV != "cuda":
        return []
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*args)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        return [n for n in names if not n.startswith(("Memcpy", "Memset"))]
    except Exception as e:  # the kernel list is a note, never a failure
        return [f"(profiler: {type(e).__name__})"]


def time_calls(fn, sets, mask, warmup, iters):
    for i in range(warmup):
        fn(*sets[i % len(sets)], mask)
    sync()
    if DEV != "cuda":
        t = []
        for i in range(iters):
            q, k, v = sets[(warmup + i) % len(sets)]
            t0 = time.perf_counter()
            fn(q, k, v, mask)
            t.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(t), min(t)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i, (a, b) in enumerate(ev):
        q, k, v = sets[(warmup + i) % len(sets)]
        a.record()
        fn(q, k, v, mask)
        b.record()
    torch.cuda.synchronize()
    t = [a.elapsed_time(b) for a, b in ev]
    return statistics.median(t), min(t)


def rel_err(got, want):
    got, want = got.double(), want.double()
    e = (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()
    return e if math.isfinite(e) else float("inf")


def run_case(name, text, warmup, iters):
    c = parse_case(text)
    dt = DTYPES[c.dtype]
    nsets = max(1, min(8, math.ceil(256 * 2**20 / case_bytes(c))))
    g = torch.Generator(device=DEV).manual_seed(1234)
    rnd = lambda *s: (torch.rand(*s, device=DEV, generator=g) * 4 - 2).to(dt)
    sets = [(rnd(c.b, c.h, c.sq, c.d), rnd(c.b, c.hkv, c.sk, c.d), rnd(c.b, c.hkv, c.sk, c.dv)) for _ in range(nsets)]
    mask = causal_mask(c) if c.causal else None
    explicit = make_explicit(c)
    q, k, v = sets[0]
    want = explicit(q[:1].double(), k[:1].double(), v[:1].double(), mask)
    print(f"== {name}: {c.dtype} B={c.b} H={c.h} Hkv={c.hkv} Sq={c.sq} Sk={c.sk} D={c.d} Dv={c.dv}"
          f"{' causal' if c.causal else ''} scale={c.scale:.6g}; {nsets} input sets", flush=True)
    sdpa, note = make_sdpa(c)
    sdpa_mask = None if (not c.causal or c.sq == c.sk) else mask
    impls = [("sdpa", lambda: (sdpa, sdpa_mask, note))]

    def compiled():
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        fn = torch.compile(explicit, dynamic=False, fullgraph=True)
        t0 = time.time()
        fn(q, k, v, mask)
        sync()
        rewrites = sum(n for key, n in counters["inductor"].items() if "fuse_attention" in key)
        return fn, mask, f"compiled in {time.time() - t0:.1f} s; SDPA pattern rewrites {rewrites}"

    impls.append(("compile", compiled))
    for impl, make in impls:
        try:
            with torch.inference_mode():
                fn, m, info = make()
                err = rel_err(fn(q, k, v, m)[:1], want)
                med, mn = time_calls(fn, sets, m, warmup, iters)
                ks = cuda_kernels(fn, (q, k, v, m))
            tol = {"f32": 1e-4, "f16": 1e-2, "bf16": 8e-2}[c.dtype]
            ok = int(err <= tol)
            print(f"{impl}: median {med:.4f} ms, min {mn:.4f} ms over {iters} calls; "
                  f"{case_flops(c) / med / 1e9:.2f} TFLOP/s, {case_bytes(c) / med / 1e6:.0f} GB/s; "
                  f"error vs float64 on batch 0 {err:.2e}{'' if ok else ' WRONG'}; {info}", flush=True)
            if DEV == "cuda":
                print(f"{impl}: {len(ks)} CUDA kernels: {' | '.join(k[:100] for k in ks)}", flush=True)
            print(f"RESULT case={name} impl={impl} ok={ok} median_ms={med:.5f} min_ms={mn:.5f} rel_err={err:.3e}"
                  f" kernels={len(ks) if DEV == 'cuda' else '-'}"
                  f"{'' if ok else ' why=wrong'}", flush=True)
        except Exception as e:  # one failure must not lose the other cases
            traceback.print_exc()
            why = type(e).__name__
            print(f"RESULT case={name} impl={impl} ok=0 why={why}", flush=True)
        sync()


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    global DEV
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--case", nargs=2, action="append", metavar=("NAME", "OPTIONS"), default=[])
    a = p.parse_args()
    DEV = a.device
    if DEV == "cuda":
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; "
              f"allow_tf32 matmul={torch.backends.cuda.matmul.allow_tf32} cudnn={torch.backends.cudnn.allow_tf32}",
              flush=True)
    else:
        print(f"torch {torch.__version__} on the CPU ({cpu_name()}), {torch.get_num_threads()} threads; "
              f"{torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, 'cpu') else ''}", flush=True)
    for name, text in a.case:
        try:
            run_case(name, text, a.warmup, max(1, a.iters))
        except Exception as e:
            traceback.print_exc()
            for impl in ("sdpa", "compile"):
                print(f"RESULT case={name} impl={impl} ok=0 why={type(e).__name__}", flush=True)
        if DEV == "cuda":
            torch.cuda.empty_cache()  # the case's tensors are gone with run_case
    return 0


if __name__ == "__main__":
    sys.exit(main())
