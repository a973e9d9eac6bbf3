#!/usr/bin/env python3
"""PyTorch and onnxruntime references for the model benchmark (issue 15).

On the GPU machine, for each tiny fixture family (Llama, GPT-2, BERT: the
models of tests/models/make_fixtures.py, rebuilt from the same configs and
seeds, fed the fixture's own inputs), prints one JSON line per measurement:

  torch eager and torch.compile on cuda: median ms of triton's do_bench
  Inductor's kernel count: torch._inductor.metrics.generated_kernel_count
      after compiling, and the CUDA kernels one compiled call launches
      (torch.profiler; Triton kernels plus cuBLAS/cuDNN calls)
  onnxruntime's CPU provider on the fixture's model.onnx (threads: all cores):
      median ms of 200 runs after 20 warm-up

With --bench DIR (a make_fixtures.py --size bench export) the same for the
Llama-shaped stack, with fewer runs.

    python3 bench/models/bench_models.py [--families llama gpt2 bert] [--bench DIR]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import make_fixtures as mf  # noqa: E402


def emit(**kw):
    print(json.dumps(kw), flush=True)


def load_inputs(d):
    out = {}
    for f in sorted(os.listdir(d)):
        if f.startswith("input_") and f.endswith(".npy"):
            out[f[6:-4]] = np.load(os.path.join(d, f))
    return out


def ort_time(model_path, feeds, runs, warm):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count() or 1
    s = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    for _ in range(warm):
        s.run(None, feeds)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def torch_times(family, cfg, d, kind, rep_ms):
    import torch
    import triton.testing as tt
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, config = mf.build_model(family, cfg, "sdpa")
    wrapper, in_names, _ = mf.make_wrapper(model, family, kind)
    feeds = load_inputs(d)
    dev = "cuda"
    wrapper = wrapper.to(dev)
    args = [torch.from_numpy(feeds[n]).to(dev) for n in in_names]
    with torch.no_grad():
        eager = tt.do_bench(lambda: wrapper(*args), warmup=50, rep=rep_ms, return_mode="median")
        from torch._inductor import metrics
        metrics.reset()
        comp = torch.compile(wrapper)
        t0 = time.perf_counter()
        comp(*args)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        generated = metrics.generated_kernel_count
        compiled = tt.do_bench(lambda: comp(*args), warmup=50, rep=rep_ms, return_mode="median")
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            comp(*args)
            torch.cuda.synchronize()
        launched = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return dict(eager_ms=eager, compile_ms=compiled, compile_s=compile_s, inductor_generated_kernels=generated,
                cuda_kernels_per_call=launched)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", nargs="*", default=["llama", "gpt2", "bert"])
    ap.add_argument("--exporter", default="torchscript")
    ap.add_argument("--bench", default=None, help="a make_fixtures.py --size bench output dir")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    cfgs = mf.tiny_configs()
    for fam in a.families:
        d = os.path.join(ROOT, "tests", "models", f"{fam}_{a.exporter}_ids")
        feeds = load_inputs(d)
        emit(model=os.path.basename(d), what="onnxruntime_cpu", ms=ort_time(os.path.join(d, "model.onnx"), feeds, 200, 20),
             threads=os.cpu_count())
        if not a.no_torch:
            emit(model=os.path.basename(d), what="torch_cuda", **torch_times(fam, cfgs[fam], d, "ids", 500))
    if a.bench:
        for name in sorted(os.listdir(a.bench)):
            d = os.path.join(a.bench, name)
            if not os.path.isfile(os.path.join(d, "model.onnx")):
                continue
            feeds = load_inputs(d)
            emit(model="bench:" + name, what="onnxruntime_cpu",
                 ms=ort_time(os.path.join(d, "model.onnx"), feeds, 10, 2), threads=os.cpu_count())
            if not a.no_torch and name.startswith("llama"):
                emit(model="bench:" + name, what="torch_cuda",
                     **torch_times("llama", mf.bench_configs()["llama"], d, "ids", 1000))


if __name__ == "__main__":
    main()
