#!/usr/bin/env python3
"""Writes the binary ONNX fixtures of the 'onnx' suite with the onnx Python
package (Debian: python3-onnx), so that the reader is tested on files that
onnx itself serialized:

  - GRAPH.onnx for each tests/graphs/GRAPH.onnxtxt, through onnx.parser:
    the text and binary forms of one model (tensor literals in the typed
    fields, as onnx.parser writes them);
  - mlp_raw.onnx: an MLP block with a symbolic batch dimension and f32
    weights in raw_data (numpy_helper.from_array), an int64 Reshape shape;
  - mlp_external.onnx + mlp_external.bin: the same model saved with
    save_as_external_data (every tensor in one file beside the model).

Run from anywhere; it writes next to itself. The outputs are committed:
the suite does not need python3-onnx.

    /usr/bin/python3 tests/onnx/make_models.py
"""
import os

import numpy as np
import onnx
import onnx.parser
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = os.path.join(HERE, "..", "graphs")


def text_models():
    for name in sorted(os.listdir(GRAPHS)):
        if not name.endswith(".onnxtxt"):
            continue
        with open(os.path.join(GRAPHS, name)) as f:
            model = onnx.parser.parse_model(f.read())
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(HERE, name[:-len(".onnxtxt")] + ".onnx"))


def mlp_model():
    """y = reshape(relu(x @ w1 + b1) @ w2 + b2, [-1, 2, 2]) with x: float[B, 8]."""
    rng = np.random.default_rng(15)
    w1 = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    b1 = rng.uniform(-1, 1, (16,)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (16, 4)).astype(np.float32)
    b2 = rng.uniform(-1, 1, (4,)).astype(np.float32)
    shape = np.array([-1, 2, 2], dtype=np.int64)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (shape, "shape")]]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="act"),
        helper.make_node("Gemm", ["h2", "w2", "b2"], ["h3"], name="gemm2", alpha=1.0, beta=1.0),
        helper.make_node("Reshape", ["h3", "shape"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "mlp_raw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 2, 2])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    text_models()
    model = mlp_model()
    onnx.save(model, os.path.join(HERE, "mlp_raw.onnx"))
    ext = os.path.join(HERE, "mlp_external.onnx")
    onnx.save_model(model, ext, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="mlp_external.bin", size_threshold=0)
    onnx.checker.check_model(ext)


if __name__ == "__main__":
    main()
