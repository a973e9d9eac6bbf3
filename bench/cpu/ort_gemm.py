"""ONNX Runtime's CPU figures for the GEMM cases of shared BENCH.md at their
CPU sizes, a reference to run beside bench_gemm on PoCL in the same call
where torch is not installed: gemm_epilogue relu(x @ w + b) at 1024^3 and
mlp x + (gelu(x @ w1 + b1) @ w2 + b2) at M=1024, d=512, ff=2048 (GELU in
its erf form, as torch's default), f32, the CPU execution provider with
--threads intra-op threads (default: every core). Prints one line per
case: median and minimum ms over --iters calls after --warmup, and the
GFLOP/s of the median.

    python3 bench/cpu/ort_gemm.py [--iters 30] [--threads N]
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from cpu_timing import timed


def model(nodes, inputs, output, inits):
    g = helper.make_graph(nodes, "g", inputs, [output], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    r = lambda *s: (rng.random(s, dtype=np.float32) * 2 - 1).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1

    n = 1024
    x = r(n, n)
    gemm = model(
        [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        [f32("x", [n, n])], f32("y", [n, n]),
        [numpy_helper.from_array(r(n, n), "w"), numpy_helper.from_array(r(n), "b")])
    s = ort.InferenceSession(gemm, so, providers=["CPUExecutionProvider"])
    med, mn = timed(lambda: s.run(None, {"x": x}), a.iters, a.warmup)
    print(f"gemm_epilogue 1024^3 onnxruntime: median {med:.3f} ms min {mn:.3f} ms "
          f"({2 * n ** 3 / med / 1e6:.0f} GFLOP/s), {a.threads} threads")

    m, d, ff = 1024, 512, 2048
    x = r(m, d)
    mlp = model(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
         helper.make_node("Div", ["hb", "sqrt2"], ["hs"]), helper.make_node("Erf", ["hs"], ["he"]),
         helper.make_node("Add", ["he", "one"], ["h1"]), helper.make_node("Mul", ["hb", "h1"], ["hm"]),
         helper.make_node("Mul", ["hm", "half"], ["gelu"]), helper.make_node("MatMul", ["gelu", "w2"], ["o"]),
         helper.make_node("Add", ["o", "b2"], ["ob"]), helper.make_node("Add", ["x", "ob"], ["y"])],
        [f32("x", [m, d])], f32("y", [m, d]),
        [numpy_helper.from_array(r(d, ff), "w1"), numpy_helper.from_array(r(ff), "b1"),
         numpy_helper.from_array(r(ff, d), "w2"), numpy_helper.from_array(r(d), "b2"),
         numpy_helper.from_array(np.array(np.sqrt(2), np.float32), "sqrt2"),
         numpy_helper.from_array(np.array(1, np.float32), "one"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    s = ort.InferenceSession(mlp, so, providers=["CPUExecutionProvider"])
    med, mn = timed(lambda: s.run(None, {"x": x}), a.iters, a.warmup)
    print(f"mlp 1024,512,2048 onnxruntime: median {med:.3f} ms min {mn:.3f} ms "
          f"({4 * m * d * ff / med / 1e6:.0f} GFLOP/s), {a.threads} threads")


if __name__ == "__main__":
    main()
