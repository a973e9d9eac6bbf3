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
    save_as_external_data (every tensor in one file beside the model);
  - half precision (see half_models() below): mlp16.onnx (float16 weights
    in raw_data) and mlp16_int32.onnx (the same weights bit-cast into
    int32_data, the other encoding the ONNX spec allows for float16),
    norm16.onnx (LayerNormalization and Softmax on float16 rows holding
    values near the float16 maximum), cast16.onnx (Cast and CastLike
    between float, float16 and bfloat16, bfloat16 initializers in
    int32_data and raw_data, arithmetic on bfloat16), with their inputs and
    expected outputs in half/MODEL.in.NAME.npy and half/MODEL.out.NAME.npy
    (float16 as '<f2', bfloat16 as '<u2' bit patterns, float as '<f4').

Run from anywhere; it writes next to itself. The outputs are committed:
the suite does not need python3-onnx.

    /usr/bin/python3 tests/onnx/make_models.py
"""
import math
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


# ---- Half precision -----------------------------------------------------------
#
# The expected outputs of the float16/bfloat16 models are computed here with
# numpy, emulating the semantics libclfuse implements: each node computes in
# float32 on its inputs (float16 and bfloat16 widen to float32 exactly) and
# rounds its value once to its output type, to nearest even: numpy's
# astype(np.float16) for float16, bf16_bits() for bfloat16 (quiet NaN kept).
# LayerNormalization and Softmax compute internally in float32 (here in
# float64, then rounded to float32) and round their result once. MatMul
# accumulates in float64 here, float32 in libclfuse: equal but at rounding
# ties; the tests allow for that where the math is not exact.
#
# When onnxruntime can be imported (it is not needed to run the tests), the
# script also runs mlp16, mlp16_int32 and norm16 with graph optimisations off
# and checks they agree with the emulation within 1 ulp, 2 for mlp16's y:
# onnxruntime's float16 Erf is not correctly rounded (erf(0.66309) =
# 0.651625 gives 0.65137, not 0.65186) and its float16 MatMul does not round
# an exact float32 sum once (2.47831 gives 2.477, not 2.479), 1 ulp each,
# which the second MatMul carries to y. Of cast16, its Cast and CastLike
# nodes are checked bit for bit (sign of zero and NaN included) in a copy
# with b as an initializer and each bfloat16 output cast to float
# (onnxruntime's Python API takes no bfloat16 arrays); its Mul and Add on
# bfloat16 are emulation only (onnxruntime's CPU provider has no bfloat16
# Mul or Add). The committed files were checked against onnxruntime 1.32.0
# (h, ln, sm and the casts: 0 ulp; y: 2):
#
#   python3 -m venv /tmp/ortvenv --system-site-packages
#   /tmp/ortvenv/bin/pip install onnxruntime
#   /tmp/ortvenv/bin/python tests/onnx/make_models.py

HALF = os.path.join(HERE, "half")


def f16(a):
    """float32 values (computed in float32) rounded to float16, nearest even (inf from 65520 up)."""
    with np.errstate(over="ignore"):
        return np.asarray(a, np.float32).astype(np.float16)


def w32(a):
    """float16 values widened to float32 (exact)."""
    return np.asarray(a).astype(np.float32)


def bf16_bits(a):
    """float32 values to bfloat16 bits (the high half), rounded to nearest even; a NaN stays a quiet NaN."""
    a = np.ascontiguousarray(a, np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_f32(bits):
    """bfloat16 bits widened to float32 (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def erf32(a):
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(a, np.float64)).astype(np.float32)


def bf16_tensor(name, bits, raw):
    """A BFLOAT16 TensorProto holding exactly these bits: in raw_data, or one per int32_data entry."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.BFLOAT16
    t.dims.extend(bits.shape)
    if raw:
        t.raw_data = np.ascontiguousarray(bits, "<u2").tobytes()
    else:
        t.int32_data.extend(int(v) for v in bits.reshape(-1))
    return t


def f16_tensor(name, a, raw):
    """A FLOAT16 TensorProto: numpy_helper.from_array (raw_data), or helper.make_tensor with raw=False,
    which bit-casts each value to uint16 and stores it in int32_data (onnx.proto: "float16 values must be
    bit-wise converted to an uint16_t prior to writing to the buffer")."""
    if raw:
        t = numpy_helper.from_array(a, name)
        assert t.HasField("raw_data") and not t.int32_data
    else:
        t = helper.make_tensor(name, TensorProto.FLOAT16, a.shape, a.reshape(-1))
        assert not t.HasField("raw_data")
        assert list(t.int32_data) == [int(v) for v in a.reshape(-1).view(np.uint16)]
    assert np.array_equal(numpy_helper.to_array(t).view(np.uint16), a.view(np.uint16))
    return t


def half_model(name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    return model


F16, BF16, F32 = TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT


def mlp16(raw):
    """y = relu(gelu(x @ w1 + b1) @ w2 + b2) and h = x @ w1 + b1 on float16, x: float16[B, 8]; GELU
    spelled out (Div, Erf, Add, Mul, Mul), each node rounding to float16. x, w1 and b1 are
    multiples of 1/4 small enough that h is exact in any summation order."""
    rng = np.random.default_rng(16)
    quarters = lambda lo, hi, shape: (rng.integers(lo, hi + 1, shape) / 4).astype(np.float16)
    x = quarters(-8, 8, (3, 8))
    w1 = quarters(-4, 4, (8, 16))
    b1 = quarters(-4, 4, (16,))
    w2 = f16(rng.uniform(-0.5, 0.5, (16, 4)))
    b2 = f16(rng.uniform(-0.5, 0.5, (4,)))
    s2, one, half = np.float16(math.sqrt(2)), np.float16(1), np.float16(0.5)
    arrays = [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("sqrt2", np.array(s2)), ("one", np.array(one)),
              ("half", np.array(half))]
    inits = [f16_tensor(n, a, raw) for n, a in arrays]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h"], name="bias1"),
        helper.make_node("Div", ["h", "sqrt2"], ["t"], name="div"),
        helper.make_node("Erf", ["t"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["u"], name="plus1"),
        helper.make_node("Mul", ["h", "u"], ["v"], name="mulh"),
        helper.make_node("Mul", ["v", "half"], ["g"], name="gelu"),
        helper.make_node("MatMul", ["g", "w2"], ["y0"], name="mm2"),
        helper.make_node("Add", ["y0", "b2"], ["y1"], name="bias2"),
        helper.make_node("Relu", ["y1"], ["y"], name="relu"),
    ]
    model = half_model("mlp16", nodes, [helper.make_tensor_value_info("x", F16, ["B", 8])],
                       [helper.make_tensor_value_info("h", F16, ["B", 16]),
                        helper.make_tensor_value_info("y", F16, ["B", 4])], inits)
    h0 = f16(w32(x) @ w32(w1))
    assert np.array_equal(w32(h0), x.astype(np.float64) @ w1.astype(np.float64))  # exact
    h = f16(w32(h0) + w32(b1))
    t = f16(w32(h) / w32(s2))
    e = f16(erf32(w32(t)))
    u = f16(w32(e) + w32(one))
    v = f16(w32(h) * w32(u))
    g = f16(w32(v) * w32(half))
    y0 = f16((w32(g).astype(np.float64) @ w32(w2).astype(np.float64)).astype(np.float32))
    y1 = f16(w32(y0) + w32(b2))
    y = np.where(y1 > 0, y1, np.float16(0)).astype(np.float16)
    return model, {"x": x}, {"h": h, "y": y}


def norm16():
    """ln = LayerNormalization(x, scale, bias) (axis -1, opset 17) and sm = Softmax(x) on float16[5, 16]
    rows: random, mixed extremes (+-65504, 60000, -32768), near the float16 maximum (64000 to 64480, step
    32), all 65504 (ln = bias, sm = 1/16 exactly) and near 1000 (step 0.5). Float16 arithmetic would
    overflow in the variance (d * d > 65504); computed in float32 it does not."""
    rng = np.random.default_rng(17)
    x = np.zeros((5, 16), np.float16)
    x[0] = f16(rng.uniform(-4, 4, 16))
    x[1] = f16(rng.uniform(-2, 2, 16))
    x[1, [2, 5, 9, 13]] = [65504, -65504, 60000, -32768]
    x[2] = (64000 + 32 * rng.permutation(16)).astype(np.float16)
    x[3] = 65504
    x[4] = (1000 + 0.5 * rng.permutation(16)).astype(np.float16)
    scale = f16(rng.uniform(0.5, 1.5, 16))
    bias = f16(rng.uniform(-0.5, 0.5, 16))
    inits = [f16_tensor("scale", scale, True), f16_tensor("bias", bias, True)]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
        helper.make_node("Softmax", ["x"], ["sm"], name="sm", axis=-1),
    ]
    model = half_model("norm16", nodes, [helper.make_tensor_value_info("x", F16, [5, 16])],
                       [helper.make_tensor_value_info("ln", F16, [5, 16]),
                        helper.make_tensor_value_info("sm", F16, [5, 16])], inits)
    xd = x.astype(np.float64)
    mu = xd.mean(axis=-1, keepdims=True)
    var = ((xd - mu) ** 2).mean(axis=-1, keepdims=True)
    ln = f16(((xd - mu) / np.sqrt(var + 1e-5) * scale.astype(np.float64) + bias.astype(np.float64)).astype(np.float32))
    ex = np.exp(xd - xd.max(axis=-1, keepdims=True))
    sm = f16((ex / ex.sum(axis=-1, keepdims=True)).astype(np.float32))
    assert np.array_equal(ln[3], bias) and np.all(sm[3] == np.float16(1 / 16))
    assert np.all(np.isfinite(ln)) and np.all(np.isfinite(sm))
    return model, {"x": x}, {"ln": ln, "sm": sm}


def cast16():
    """Cast and CastLike between float, float16 and bfloat16 and back, on x: float[10] holding rounding
    ties (2049, 2051, 1 + 2^-8), overflow (65520, -70000: infinite in float16), a float16 subnormal
    (6e-5), -1e-8 (-0 in float16) and NaN, and on b: bfloat16[6]. wb (bfloat16, int32_data), wr
    (bfloat16, raw_data) and wh (float16, raw_data) are initializers; Cast(wb) and Cast(wh) have only
    initializer inputs (the importer may fold them). Mul and Add on bfloat16 round to bfloat16."""
    x = np.array([1.0, 2049.0, 2051.0, 65520.0, -1e-8, math.pi, np.nan, 1.00390625, -70000.0, 6e-5], np.float32)
    b = bf16_bits(np.array([1.5, -3.25, 1e5, 1e-6, 255.0, -0.0078125], np.float32))
    wb = bf16_bits(np.array([0.5, -2, 1, 0.25, 3, 1.5, 2, -1, 0.0078125, 1e4], np.float32))
    wr = bf16_bits(np.array([2, 0.5, -1, 3, 0.125, 4], np.float32))
    wh = f16(np.array([0.1, -0.2, 0.3, 1.0, -1.5, 2.0, 3.0, 1000.0, 0.001, -7.0], np.float32))
    inits = [bf16_tensor("wb", wb, raw=False), bf16_tensor("wr", wr, raw=True), f16_tensor("wh", wh, True)]
    c = lambda i, o, to: helper.make_node("Cast", [i], [o], name=o, to=to)
    nodes = [
        c("x", "xh", F16), c("x", "xb", BF16), c("xh", "xhf", F32), c("xb", "xbf", F32),
        helper.make_node("Mul", ["xb", "wb"], ["zb"], name="zb"),
        helper.make_node("CastLike", ["x", "wh"], ["cl16"], name="cl16"),
        helper.make_node("CastLike", ["xh", "wb"], ["clb"], name="clb"),
        c("wb", "wbf", F32), helper.make_node("Add", ["wbf", "x"], ["wbx"], name="wbx"),
        c("wh", "whb", BF16), helper.make_node("Add", ["whb", "xb"], ["whbx"], name="whbx"),
        helper.make_node("Mul", ["b", "wr"], ["bm"], name="bm"),
        c("b", "bf", F32), c("b", "bh", F16),
    ]
    outs = [("xh", F16), ("xb", BF16), ("xhf", F32), ("xbf", F32), ("zb", BF16), ("cl16", F16), ("clb", BF16),
            ("wbx", F32), ("whbx", BF16), ("bm", BF16), ("bf", F32), ("bh", F16)]
    model = half_model("cast16", nodes, [helper.make_tensor_value_info("x", F32, [10]),
                                         helper.make_tensor_value_info("b", BF16, [6])],
                       [helper.make_tensor_value_info(n, t, [6 if n[0] == "b" else 10]) for n, t in outs], inits)
    xh, xb = f16(x), bf16_bits(x)
    want = {
        "xh": xh, "xb": xb, "xhf": w32(xh), "xbf": bf16_f32(xb),
        "zb": bf16_bits(bf16_f32(xb) * bf16_f32(wb)),
        "cl16": f16(x), "clb": bf16_bits(w32(xh)),
        "wbx": bf16_f32(wb) + x,
        "whbx": bf16_bits(bf16_f32(bf16_bits(w32(wh))) + bf16_f32(xb)),
        "bm": bf16_bits(bf16_f32(b) * bf16_f32(wr)),
        "bf": bf16_f32(b), "bh": f16(bf16_f32(b)),
    }
    # The cases the inputs were chosen for.
    assert [float(v) for v in xh[[1, 2, 7]]] == [2048, 2052, 1.00390625] and np.isinf(xh[[3, 8]]).all()
    assert xh[4] == 0 and np.signbit(xh[4]) and 0 < xh[9] < np.finfo(np.float16).tiny and np.isnan(xh[6])
    assert bf16_f32(xb)[7] == 1.0 and want["clb"][2] == bf16_bits(np.float32(2048))[()] and np.isinf(want["bh"][2])
    return model, {"x": x, "b": b}, want


def check_with_ort(name, path, inputs, want, tol={"y": 2}):
    try:
        import onnxruntime as ort
    except ImportError:
        return
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    got = sess.run(None, inputs)
    for o, g in zip(sess.get_outputs(), got):
        wv = want[o.name]
        assert g.dtype == wv.dtype, (name, o.name, g.dtype)
        # float16 bits as sign-magnitude integers: their difference counts ulps.
        gi, wi = (a.view(np.int16).astype(np.int32) for a in (g, wv))
        gi, wi = (np.where(a < 0, -0x8000 - a, a) for a in (gi, wi))
        ulps = int(np.max(np.abs(gi - wi)))
        print(f"  {name}.{o.name}: onnxruntime {ort.__version__} within {ulps} ulp of the emulation")
        assert ulps <= tol.get(o.name, 1), (name, o.name, g, wv)


def check_casts_with_ort(model, inputs, want):
    """cast16's Cast and CastLike nodes on onnxruntime, bit for bit (see above)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    g.initializer.append(bf16_tensor("b", inputs["b"], raw=True))
    del g.input[1]
    casts = [n for n in g.node if n.op_type in ("Cast", "CastLike")]
    outs = [o for o in g.output if any(o.name in n.output for n in casts)]
    del g.node[:], g.output[:]
    g.node.extend(casts)
    for o in outs:
        if o.type.tensor_type.elem_type == BF16:
            g.node.append(helper.make_node("Cast", [o.name], [o.name + ".f"], to=F32))
            g.output.append(helper.make_tensor_value_info(o.name + ".f", F32, None))
        else:
            g.output.append(o)
    g.initializer.remove(next(t for t in g.initializer if t.name == "wr"))  # only Mul read it
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    for o, got in zip(sess.get_outputs(), sess.run(None, {"x": inputs["x"]})):
        name = o.name[:-2] if o.name.endswith(".f") else o.name
        wv = bf16_f32(want[name]) if o.name.endswith(".f") else want[name]
        assert np.array_equal(got, wv, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(wv)), \
            (name, got, wv)
    print(f"  cast16: onnxruntime {ort.__version__}'s casts are bit for bit the emulation's "
          f"({', '.join(o.name for o in outs)})")


def half_models():
    os.makedirs(HALF, exist_ok=True)
    for name, (model, inputs, want) in [("mlp16", mlp16(raw=True)), ("mlp16_int32", mlp16(raw=False)),
                                        ("norm16", norm16()), ("cast16", cast16())]:
        path = os.path.join(HERE, name + ".onnx")
        onnx.save(model, path)
        if name == "mlp16_int32":  # the same data as mlp16's: the suite reads mlp16's files
            continue
        for kind, arrays in (("in", inputs), ("out", want)):
            for n, a in arrays.items():
                assert a.dtype in (np.float16, np.uint16, np.float32), (name, n, a.dtype)
                np.save(os.path.join(HALF, f"{name}.{kind}.{n}.npy"), np.ascontiguousarray(a))
        if name != "cast16":
            check_with_ort(name, path, inputs, want)
        else:
            check_casts_with_ort(model, inputs, want)
    check_with_ort("mlp16_int32", os.path.join(HERE, "mlp16_int32.onnx"), *mlp16(raw=False)[1:])

def main():
    text_models()
    model = mlp_model()
    onnx.save(model, os.path.join(HERE, "mlp_raw.onnx"))
    ext = os.path.join(HERE, "mlp_external.onnx")
    # onnx appends to an existing data file: without this, each run would
    # grow mlp_external.bin by another copy of the weights.
    if os.path.exists(os.path.join(HERE, "mlp_external.bin")):
        os.remove(os.path.join(HERE, "mlp_external.bin"))
    onnx.save_model(model, ext, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="mlp_external.bin", size_threshold=0)
    onnx.checker.check_model(ext)
    half_models()


if __name__ == "__main__":
    main()
