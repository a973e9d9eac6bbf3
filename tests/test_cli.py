#!/usr/bin/env python3
"""End-to-end tests of the clfuse command-line tool on PoCL.

    test_cli.py CLFUSE GRAPHS_DIR [ONNX_DIR]

Runs the tool as a subprocess (so PoCL never crosses a fork inside one
process) with its own CLFUSE_CACHE_DIR (PoCL's cache: POCL_CACHE_DIR where
set, else its own), on the graphs in GRAPHS_DIR (ONNX text)
and the binary models in ONNX_DIR (default GRAPHS_DIR/../onnx): run with
.npy inputs compared against numpy's own computation, every command on a few
graphs, parse errors with their line and column, bad inputs and the exit
statuses (0 ok, 1 runtime failure, 2 usage or bad input). Exits 77 (skip)
when numpy is missing.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

try:
    import numpy as np
except ImportError:
    print("numpy is not installed (apt-get install python3-numpy): skipping")
    sys.exit(77)

CLFUSE = os.path.abspath(sys.argv[1])
GRAPHS = os.path.abspath(sys.argv[2])
ONNX = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else os.path.join(GRAPHS, "..", "onnx"))
TMP = tempfile.mkdtemp(prefix="clfuse-cli-")
# libclfuse's cache is always fresh; PoCL's compiled kernels are shared with
# the rest of the run where POCL_CACHE_DIR is set (as .ci/run does): they
# are the driver's business, and a cold PoCL costs minutes.
ENV = dict(os.environ, POCL_CACHE_DIR=os.environ.get("POCL_CACHE_DIR") or os.path.join(TMP, "pocl"),
           CLFUSE_CACHE_DIR=os.path.join(TMP, "cache"))
ENV.pop("CLFUSE_LOGS", None)

failures = []


def clfuse(*args, env=None, expect=0):
    p = subprocess.run([CLFUSE, *args], capture_output=True, text=True, env=env or ENV, timeout=120)
    if expect is not None and p.returncode != expect:
        raise AssertionError(f"clfuse {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def graph(name):
    return os.path.join(GRAPHS, name)


def model(name):
    return os.path.join(ONNX, name)


def tmp(name):
    return os.path.join(TMP, name)


def save(name, array):
    path = tmp(name)
    np.save(path, array)
    return path


def error_line(p, *parts):
    """The failure is one line on stderr that starts with clfuse: and holds parts."""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one error line, got: {p.stderr!r}"
    assert lines[0].startswith("clfuse: "), lines[0]
    for part in parts:
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"


def test(fn):
    try:
        fn()
        print(f"ok   {fn.__name__}")
    except Exception:
        failures.append(fn.__name__)
        print(f"FAIL {fn.__name__}")
        traceback.print_exc()
    return fn


def close(got, want, tol=1e-5):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype == np.float32:
        assert np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True), np.max(np.abs(got - want))
    else:
        assert np.array_equal(got, want), (got, want)


rng = np.random.default_rng(7)


def rand(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


# ---- run, compared with numpy ------------------------------------------------

@test
def run_chain_matches_numpy():
    a, b, c = rand(1000), rand(1000), rand(1000)
    args = ["run", graph("chain.onnxtxt"), "--input", "a=" + save("a.npy", a), "--input", "b=" + save("b.npy", b),
            "--input", "c=" + save("c.npy", c), "--output", "y=" + tmp("y.npy")]
    for extra in ([], ["--no-fusion"]):
        clfuse(*args, *extra)
        close(np.load(tmp("y.npy")), np.maximum(a * b + c, 0))


@test
def run_prints_outputs_without_output_option():
    a = np.array([-1, 2, 3], np.float32)
    p = clfuse("run", graph("chain.onnxtxt"), "--input", "a=" + save("a3.npy", a), "--input",
               "b=" + save("b3.npy", a), "--input", "c=" + save("c3.npy", np.zeros(3, np.float32)))
    assert p.stdout.strip() == "y: float32 (3,) = [1, 4, 9]", p.stdout


@test
def run_softmax_and_reduce_sum():
    x = rand(5, 37)
    clfuse("run", graph("softmax.onnxtxt"), "--input", "x=" + save("x.npy", x), "--output", "p=" + tmp("p.npy"),
           "--output", "s=" + tmp("s.npy"))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(np.load(tmp("p.npy")), e / e.sum(axis=1, keepdims=True))
    close(np.load(tmp("s.npy")), x.sum(axis=1), tol=1e-4)


@test
def run_layer_norm_block():
    from math import erf
    x, bias, gamma, beta = rand(3, 64), rand(64), rand(64), rand(64)
    clfuse("run", graph("layernorm.onnxtxt"), "--input", "x=" + save("lx.npy", x), "--input",
           "bias=" + save("lb.npy", bias), "--input", "gamma=" + save("lg.npy", gamma), "--input",
           "beta=" + save("lbe.npy", beta), "--output", "y=" + tmp("ly.npy"))
    h = (x + bias).astype(np.float64)
    g = 0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    r = g + x
    mu, var = r.mean(axis=1, keepdims=True), r.var(axis=1, keepdims=True)
    want = ((r - mu) / np.sqrt(var + 1e-5) * gamma + beta).astype(np.float32)
    close(np.load(tmp("ly.npy")), want, tol=1e-4)


@test
def run_mlp_matmul_and_gemm():
    from math import erf
    x, w1, b1, w2t, b2 = rand(6, 8), rand(8, 12), rand(12), rand(8, 12), rand(8)
    args = ["run", graph("mlp.onnxtxt"), "--input", "x=" + save("mx.npy", x), "--input", "w1=" + save("mw1.npy", w1),
            "--input", "b1=" + save("mb1.npy", b1), "--input", "w2t=" + save("mw2.npy", w2t), "--input",
            "b2=" + save("mb2.npy", b2), "--output", "y=" + tmp("my.npy")]
    h0 = x.astype(np.float64) @ w1 + b1
    h = 0.5 * h0 * (1 + np.vectorize(erf)(h0 / 1.41421356))
    want = (x + (h @ w2t.T.astype(np.float64) + b2)).astype(np.float32)
    for extra in ([], ["--no-fusion"]):
        clfuse(*args, *extra)
        close(np.load(tmp("my.npy")), want, tol=1e-4)
    p = clfuse("plan", graph("mlp.onnxtxt"), "--dim", "M=6", "--dim", "D=8", "--dim", "F=12")
    assert p.stdout.count("\nkernel ") == 2, p.stdout


@test
def run_movement_ops_opset13():
    x = rand(2, 3, 4)
    k = np.array([-3, 0, 2, 7], np.int32)
    outs = ["t", "r", "s1", "m", "pos", "w"]
    clfuse("run", graph("movement.onnxtxt"), "--input", "x=" + save("mx.npy", x), "--input",
           "k=" + save("mk.npy", k), *sum((["--output", f"{o}={tmp('mv_' + o + '.npy')}"] for o in outs), []))
    got = {o: np.load(tmp("mv_" + o + ".npy")) for o in outs}
    close(got["t"], x.transpose(2, 1, 0))
    close(got["r"], (1 / (1 + np.exp(-x))).reshape(3, -1))
    close(got["s1"], x[0:2, 0:1, 1:4:2])
    close(got["m"], np.abs(k) * k)
    close(got["pos"], x > 0)
    close(got["w"], np.where(x > 0, x, 0).astype(np.float32))


@test
def run_opset13_reductions_argmax_clip_cast():
    x = rand(4, 6)
    outs = ["mean", "mx", "am", "c", "xi", "colsum"]
    clfuse("run", graph("reduce13.onnxtxt"), "--input", "x=" + save("rx.npy", x),
           *sum((["--output", f"{o}={tmp('r_' + o + '.npy')}"] for o in outs), []))
    got = {o: np.load(tmp("r_" + o + ".npy")) for o in outs}
    close(got["mean"], x.mean(axis=1))
    close(got["mx"], x.max(axis=1, keepdims=True))
    close(got["am"], x.argmax(axis=1).astype(np.int64))  # int64, as ONNX says
    close(got["c"], np.clip(x, -0.25, 0.5))
    close(got["xi"], (x * np.float32(10)).astype(np.int32))
    close(got["colsum"], x.sum(axis=0), tol=1e-4)


@test
def run_bool_input_from_u1():
    g = tmp("not.onnxtxt")
    with open(g, "w") as f:
        f.write("g (bool[4] m) => (bool[4] n) {\n  n = Not(m)\n}\n")
    m = np.array([1, 0, 0, 1], np.uint8)
    clfuse("run", g, "--input", "m=" + save("m.npy", m), "--output", "n=" + tmp("n.npy"))
    close(np.load(tmp("n.npy")), np.array([False, True, True, False]))


# ---- the other commands -------------------------------------------------------

@test
def help_everywhere():
    assert "commands:" in clfuse("--help").stdout
    for cmd in ["devices", "run", "plan", "code", "dot", "bench", "check"]:
        p = clfuse(cmd, "--help")
        assert p.stdout.startswith("usage: clfuse " + cmd), p.stdout
    p = clfuse(expect=2)
    assert "usage:" in p.stderr
    error_line(clfuse("frobnicate", expect=2), "unknown command 'frobnicate'")


@test
def devices_lists_pocl():
    p = clfuse("devices")
    assert "[0]" in p.stdout and "(default)" in p.stdout and "compute units" in p.stdout, p.stdout


@test
def plan_counts_kernels_and_bytes():
    p = clfuse("plan", graph("chain.onnxtxt"), "--dim", "N=1024")
    rows = {line[:16].strip(): line[16:].split() for line in p.stdout.splitlines() if line.startswith("  ")}
    assert rows["kernels"] == ["1", "3"], p.stdout
    assert rows["tensor reads"] == ["3", "5"] and rows["tensor writes"] == ["1", "3"], p.stdout
    assert "t = Mul (line 4), u = Add (line 5), y = Relu (line 6)" in p.stdout, p.stdout
    p = clfuse("plan", graph("chain.onnxtxt"), "--dim", "N=1024", "--no-fusion")
    assert p.stdout.count("\nkernel ") == 3, p.stdout
    p = clfuse("plan", graph("softmax.onnxtxt"), "--dim", "R=4", "--dim", "C=8")
    assert p.stdout.count("\nkernel ") == 1, p.stdout


@test
def code_prints_kernels():
    p = clfuse("code", graph("chain.onnxtxt"), "--dim", "N=64")
    assert "// ---- kernel 0 of 1: clf_poi_fused" in p.stdout and "__kernel" in p.stdout, p.stdout[:500]


@test
def dot_draws_clusters_and_bytes():
    p = clfuse("dot", graph("layernorm.onnxtxt"), "--dim", "B=4")
    assert p.stdout.startswith("digraph") and "subgraph cluster_k0" in p.stdout, p.stdout[:300]
    assert '[label="1024 B", penwidth' in p.stdout and "style=dashed" in p.stdout, p.stdout
    out = tmp("ln.dot")
    clfuse("dot", graph("layernorm.onnxtxt"), "--dim", "B=4", "-o", out)
    assert open(out).read().startswith("digraph")
    if shutil.which("dot"):
        svg = tmp("ln.svg")
        clfuse("dot", graph("layernorm.onnxtxt"), "--dim", "B=4", "-o", svg)
        assert "<svg" in open(svg).read()
        assert not os.path.exists(tmp("ln_svg.dot"))
    # Without Graphviz: the .dot is written instead, and that is not an error.
    # The PATH holds the linker alone: PoCL's compiler driver runs `ld` to
    # build a kernel its cache lacks (the test passed only while an earlier
    # test had built the same source).
    bare = os.path.join(TMP, "empty-path")
    os.makedirs(bare, exist_ok=True)
    if shutil.which("ld") and not os.path.exists(os.path.join(bare, "ld")):
        os.symlink(shutil.which("ld"), os.path.join(bare, "ld"))
    env = dict(ENV, PATH=bare)
    p = clfuse("dot", graph("chain.onnxtxt"), "--dim", "N=8", "-o", tmp("nodot.png"), env=env)
    assert "not installed" in p.stderr and os.path.exists(tmp("nodot.dot")), p.stderr
    error_line(clfuse("dot", graph("chain.onnxtxt"), "--dim", "N=8", "-o", tmp("x.txt"), expect=2), ".svg, .png or .dot")


@test
def bench_reports_bandwidth():
    p = clfuse("bench", graph("chain.onnxtxt"), "--dim", "N=65536", "--runs", "3")
    assert "GB/s" in p.stdout and "copy roofline" in p.stdout, p.stdout
    lines = [line.split() for line in p.stdout.splitlines() if line.startswith(("unfused", "fused"))]
    assert [line[:2] for line in lines] == [["unfused", "3"], ["fused", "1"]], p.stdout
    p = clfuse("bench", graph("chain.onnxtxt"), "--dim", "N=65536", "--runs", "3", "--fused-only")
    lines = [line.split() for line in p.stdout.splitlines() if line.startswith(("unfused", "fused"))]
    assert [line[:2] for line in lines] == [["fused", "1"]], p.stdout
    assert "fusion:" not in p.stdout, p.stdout


@test
def check_against_reference():
    for g, dims in [("softmax.onnxtxt", ["--dim", "R=3", "--dim", "C=100"]), ("movement.onnxtxt", []),
                    ("reduce13.onnxtxt", [])]:
        p = clfuse("check", graph(g), *dims)
        assert "largest error" in p.stdout, p.stdout
    p = clfuse("check", graph("chain.onnxtxt"), "--dim", "N=100", "--no-fusion", "--seed", "3")
    assert "unfused" in p.stdout


# ---- parse errors: FILE:LINE:COL: what was expected ---------------------------

PARSE_ERRORS = [
    ("g (float[N] a => (float[N] y) { y = Relu(a) }", "1:15:", "expected ',' or ')' after input 'a'"),
    ("g (float[N] a) => (float[N] y) {\n  y = Relu(a\n}", "3:1:", "expected ',' or ')'"),
    ("g (float[N] a) (float[N] y) { y = Relu(a) }", "1:16:", "expected '=>' after the input list"),
    ("g (float[N] a) => (float[N] y) {\n  y = Relu <alpha = > (a)\n}", "2:21:", "expected an attribute value"),
    ("g (float[N, ] a) => (float[N] y) { y = Relu(a) }", "1:13:", "expected a dimension"),
    ("g (floot[N] a) => (float[N] y) { y = Relu(a) }", "1:4:", "expected a type"),
    ("<ir_version: 8, opset_import: [\"\" : 18]>\ng (float[2] a) => (float[2] y) <float[2] w = {1}> {\n y = Add(a, w)\n}",
     "2:46:", "holds 2 values but 1 are given"),
    ("g (float[N] a) => (float[N] y) {\n  y = Relu(a)\n", "3:1:", "expected '}'"),
]


@test
def parse_errors_name_line_and_column():
    for i, (text, where, what) in enumerate(PARSE_ERRORS):
        path = tmp(f"bad{i}.onnxtxt")
        with open(path, "w") as f:
            f.write(text)
        p = clfuse("plan", path, "--dim", "N=4", expect=2)
        error_line(p, f"{path}:{where}", what)


IMPORT_ERRORS = [
    ("g (float[4] a) => (float[4] y) {\n  y = Einsum(a, a)\n}", "2:7:", "Einsum is not supported by libclfuse yet"),
    ("g (float[4] a, float[3] b) => (float y) {\n  y = MatMul(a, b)\n}", "2:7:", "clf_matmul: a [1,4] and b [3,1]"),
    ("g (float[4] a) => (float[4] y) {\n  y = Frob(a)\n}", "2:7:", "op Frob is not supported by libclfuse"),
    ("g (float[4] a) => (float[4] y) {\n  y = Relu(b)\n}", "2:7:", "input 'b' is not defined"),
    ("g (float[4] a) => (float[2, 2] y) {\n  y = Reshape(a, a)\n}", "2:7:", "must be a Constant, an initializer or computable from them"),
    ("g (float[4] a, int32[4] b) => (float[4] y) {\n  y = Add(a, b)\n}", "2:7:", "node 0 (Add): clf_binary:"),
    ("g (double[4] a) => (float[4] y) {\n  y = Relu(a)\n}", "1:4:", "input 'a' is double"),
    ("g (int64[4] a) => (float[4] y) {\n  y = Relu(a)\n}", "2:7:", "x has dtype i64; relu takes f32"),
    ("g (float[4] a) => (float[5] y) {\n  y = Relu(a)\n}", "1:20:", "output 'y' is declared float[5]"),
    ("g (float[N] a) => (float[N] y) {\n  y = Relu(a)\n}", "1:4:", "dimension 'N' of input 'a' has no size"),
    ("g (float[4] a) => (float[4] y) {\n  y = Gelu <approximate = \"erf\"> (a)\n}", "2:13:", "approximate"),
]


@test
def import_errors_name_the_node():
    for i, (text, where, what) in enumerate(IMPORT_ERRORS):
        path = tmp(f"imp{i}.onnxtxt")
        with open(path, "w") as f:
            f.write(text)
        p = clfuse("plan", path, expect=2)
        error_line(p, f"{path}:{where}", what)


# ---- binary .onnx models ----------------------------------------------------------

def mlp_weights():
    """The weights of tests/onnx/mlp_*.onnx, from the external data file."""
    raw = np.fromfile(model("mlp_external.bin"), dtype=np.uint8)
    f = lambda lo, hi, shape: raw[lo:hi].view(np.float32).reshape(shape)
    return f(0, 512, (8, 16)), f(512, 576, (16,)), f(576, 832, (16, 4)), f(832, 848, (4,))


@test
def binary_models_run_plan_dot_and_bench():
    a, b, c = rand(300), rand(300), rand(300)
    clfuse("run", model("chain.onnx"), "--input", "a=" + save("ba.npy", a), "--input", "b=" + save("bb.npy", b),
           "--input", "c=" + save("bc.npy", c), "--output", "y=" + tmp("by.npy"))
    close(np.load(tmp("by.npy")), np.maximum(a * b + c, 0))
    # Weights in raw_data and in an external file (onnx.save's forms).
    w1, b1, w2, b2 = mlp_weights()
    x = rand(5, 8)
    want = (np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2).reshape(5, 2, 2).astype(np.float32)
    for name in ("mlp_raw.onnx", "mlp_external.onnx"):
        clfuse("run", model(name), "--input", "x=" + save("bx.npy", x), "--output", "y=" + tmp("bmy.npy"))
        close(np.load(tmp("bmy.npy")), want, tol=1e-4)
    p = clfuse("plan", model("mlp_external.onnx"), "--dim", "B=64")
    assert p.stdout.startswith("graph mlp_raw (") and p.stdout.count("\nkernel ") == 2, p.stdout
    assert "h0 = MatMul (node 0 'mm1')" in p.stdout and "y = Reshape (node 4 'reshape')" in p.stdout, p.stdout
    p = clfuse("dot", model("layernorm.onnx"), "--dim", "B=4")
    assert p.stdout.startswith("digraph") and "subgraph cluster_k0" in p.stdout, p.stdout[:300]
    p = clfuse("bench", model("chain.onnx"), "--dim", "N=65536", "--runs", "3")
    lines = [line.split() for line in p.stdout.splitlines() if line.startswith(("unfused", "fused"))]
    assert [line[:2] for line in lines] == [["unfused", "3"], ["fused", "1"]], p.stdout
    p = clfuse("check", model("softmax.onnx"), "--dim", "R=3", "--dim", "C=50")
    assert "largest error" in p.stdout, p.stdout


@test
def bad_binary_models_are_refused_with_one_line():
    with open(model("mlp_raw.onnx"), "rb") as f:
        data = f.read()
    cut = tmp("cut.onnx")
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 2])
    error_line(clfuse("plan", cut, "--dim", "B=2", expect=2), cut + ": ", "cannot decode")
    junk = tmp("junk.onnx")
    with open(junk, "wb") as f:
        f.write(bytes(range(256)))
    error_line(clfuse("plan", junk, expect=2), junk + ": ")
    # External data that is missing.
    lone = tmp("lone.onnx")
    shutil.copy(model("mlp_external.onnx"), lone)
    error_line(clfuse("plan", lone, "--dim", "B=2", expect=2), lone + ": initializer 'w1': external data "
               "'mlp_external.bin': cannot open")


# ---- float16 and bfloat16 models --------------------------------------------------
# tests/onnx/{mlp16,cast16}.onnx with their inputs and expected outputs in
# tests/onnx/half (numpy's emulation of the semantics, see make_models.py):
# float16 tensors are '<f2' .npy files, bfloat16 ones '<u2' bit patterns.

def half(name):
    return os.path.join(ONNX, "half", name)


def npy_descr(path):
    """The descr of a .npy file's header, as written (not as numpy reads it back)."""
    with open(path, "rb") as f:
        head = f.read(256).decode("latin-1")
    key = "'descr': '"
    i = head.index(key) + len(key)
    return head[i:head.index("'", i)]


def close16(got, want, bf16=False, ulps=0, atol=0.0):
    """float16 values, or bfloat16 bits in uint16: NaN where want is NaN, infinities exactly, others
    within ulps units in the last place (+0 and -0 equal) or atol."""
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    bits = lambda a: a.view(np.uint16).astype(np.int64)
    value = (lambda a: (a.astype(np.uint32) << 16).view(np.float32)) if bf16 else (lambda a: a.astype(np.float32))
    g, w = bits(got), bits(want)
    og, ow = (np.where(b & 0x8000, -(b & 0x7FFF), b) for b in (g, w))
    gv, wv = value(got), value(want)
    nan = np.isnan(wv)
    assert np.array_equal(np.isnan(gv), nan), (gv, wv)
    inf = np.isinf(wv)
    assert np.array_equal(gv[inf], wv[inf]), (gv, wv)
    with np.errstate(invalid="ignore"):  # inf - inf where both are infinite (checked above)
        ok = (np.abs(og - ow) <= ulps) | (np.abs(gv.astype(np.float64) - wv) <= atol) | nan | inf
    assert ok.all(), f"got {gv[~ok]}, want {wv[~ok]} at {np.argwhere(~ok).tolist()}"


@test
def run_f16_model_reads_and_writes_float16():
    args = ["run", model("mlp16.onnx"), "--input", "x=" + half("mlp16.in.x.npy"),
            "--output", "h=" + tmp("h16.npy"), "--output", "y=" + tmp("y16.npy")]
    for name in ("mlp16.onnx", "mlp16_int32.onnx"):
        for extra in ([], ["--no-fusion"]):
            args[1] = model(name)
            clfuse(*args, *extra)
            for o in ("h", "y"):
                assert npy_descr(tmp(o + "16.npy")) == "<f2", npy_descr(tmp(o + "16.npy"))
            h, y = np.load(tmp("h16.npy")), np.load(tmp("y16.npy"))
            # h = x @ w1 + b1 is exact; y within 2 ulps or 2^-8 (see test_onnx.c)
            close16(h, np.load(half("mlp16.out.h.npy")))
            close16(y, np.load(half("mlp16.out.y.npy")), ulps=2, atol=1 / 256)
    p = clfuse("run", model("mlp16.onnx"), "--input", "x=" + half("mlp16.in.x.npy"))
    assert p.stdout.startswith("h: float16 (3, 16) = [") and "\ny: float16 (3, 4) = [" in p.stdout, p.stdout


@test
def run_bf16_input_from_uint16_bits():
    outs = {"xh": "<f2", "xb": "<u2", "xhf": "<f4", "zb": "<u2", "clb": "<u2", "wbx": "<f4", "whbx": "<u2",
            "bm": "<u2", "bf": "<f4", "bh": "<f2"}
    assert npy_descr(half("cast16.in.b.npy")) == "<u2"
    clfuse("run", model("cast16.onnx"), "--input", "x=" + half("cast16.in.x.npy"), "--input",
           "b=" + half("cast16.in.b.npy"), *sum((["--output", f"{o}={tmp('c16_' + o + '.npy')}"] for o in outs), []))
    for o, descr in outs.items():
        path = tmp("c16_" + o + ".npy")
        assert npy_descr(path) == descr, (o, npy_descr(path), descr)
        got, want = np.load(path), np.load(half(f"cast16.out.{o}.npy"))
        if descr == "<f4":
            assert np.array_equal(got, want, equal_nan=True), (o, got, want)
        else:
            close16(got, want, bf16=descr == "<u2")


@test
def half_inputs_of_the_wrong_dtype_are_refused():
    # Never converted silently (as float64 or int32 for a float input is not):
    # float32 -> float16 rounds and overflows, and float16 and bfloat16 bits
    # differ, so the user is told what to save instead.
    x32 = save("x32.npy", np.load(half("mlp16.in.x.npy")).astype(np.float32))
    error_line(clfuse("run", model("mlp16.onnx"), "--input", "x=" + x32, expect=2),
               "input 'x'", "x32.npy", "holds float", "float16[B, 8]")
    xu = save("xu16.npy", np.load(half("mlp16.in.x.npy")).view(np.uint16))
    error_line(clfuse("run", model("mlp16.onnx"), "--input", "x=" + xu, expect=2),
               "input 'x'", "holds bfloat16", "float16[B, 8]")
    x = half("cast16.in.x.npy")
    bh = save("b16.npy", np.ones(6, np.float16))
    error_line(clfuse("run", model("cast16.onnx"), "--input", "x=" + x, "--input", "b=" + bh, expect=2),
               "input 'b'", "holds float16", "bfloat16[6]")
    bf = save("bf32.npy", np.ones(6, np.float32))
    error_line(clfuse("run", model("cast16.onnx"), "--input", "x=" + x, "--input", "b=" + bf, expect=2),
               "input 'b'", "holds float", "bfloat16[6]")


@test
def half_models_check_plan_and_bench():
    for name, dims in (("mlp16.onnx", ["--dim", "B=5"]), ("norm16.onnx", []), ("cast16.onnx", [])):
        p = clfuse("check", model(name), *dims)
        assert "largest error" in p.stdout, p.stdout
    p = clfuse("plan", model("mlp16.onnx"), "--dim", "B=64")
    assert p.stdout.startswith("graph mlp16 (") and "\nkernel " in p.stdout, p.stdout
    p = clfuse("bench", model("mlp16.onnx"), "--dim", "B=64", "--runs", "3")
    assert "GB/s" in p.stdout, p.stdout


# ---- bad inputs ------------------------------------------------------------------

@test
def bad_inputs_are_refused_with_one_line():
    a = save("ga.npy", rand(8))
    c = save("gc.npy", rand(8))
    g = graph("chain.onnxtxt")
    cases = [
        (["--input", "a=" + a, "--input", "b=" + save("f64.npy", np.ones(8)), "--input", "c=" + c],
         ["f64.npy", "float64", "astype"]),
        (["--input", "a=" + a, "--input", "b=" + save("c7.npy", rand(7)), "--input", "c=" + c],
         ["input 'b'", "N = 7"]),
        (["--input", "a=" + a, "--input", "b=" + save("i32.npy", np.ones(8, np.int32)), "--input", "c=" + c],
         ["input 'b'", "holds int32", "float"]),
        (["--input", "a=" + a, "--input", "b=" + save("r2.npy", rand(2, 4)), "--input", "c=" + c],
         ["input 'b'", "has shape [2, 4]", "float[N]"]),
        (["--input", "a=" + a, "--input", "b=" + save("fo.npy", np.asfortranarray(rand(2, 4))), "--input", "c=" + c],
         ["Fortran order"]),
        (["--input", "a=" + a, "--input", "b=" + a], ["input 'c' is not given", "--input c=FILE.npy"]),
        (["--input", "a=" + a, "--input", "b=" + a, "--input", "c=" + c, "--input", "q=" + c],
         ["no input named 'q'", "a, b, c"]),
        (["--input", "a=" + a, "--input", "b=" + a, "--input", "c=" + c, "--output", "z=" + tmp("z.npy")],
         ["no output named 'z'"]),
        (["--input", "a=" + a, "--input", "b=" + tmp("missing.npy"), "--input", "c=" + c], ["missing.npy", "cannot open"]),
        (["--input", "a" + a], ["--input wants NAME=FILE"]),
        (["--input", "a=" + a, "--input", "b=" + a, "--input", "c=" + c, "--bogus"], ["unknown option '--bogus'"]),
    ]
    with open(tmp("notnpy.npy"), "wb") as f:
        f.write(b"hello")
    cases.append((["--input", "a=" + a, "--input", "b=" + tmp("notnpy.npy"), "--input", "c=" + c], ["not a .npy"]))
    for args, parts in cases:
        error_line(clfuse("run", g, *args, expect=2), *parts)
    error_line(clfuse("run", tmp("nonexistent.onnxtxt"), expect=2), "nonexistent.onnxtxt", "cannot open")
    # generate: what it takes is checked before anything is compiled (the
    # tokens themselves: check_generate_kv.py, kv_cache suite).
    error_line(clfuse("generate", tmp("nonexistent.onnx"), expect=2), "nonexistent.onnx", "cannot open")
    no_cache = os.path.join(ONNX, "..", "models", "llama_torchscript_ids", "model.onnx")
    error_line(clfuse("generate", no_cache, expect=2), "no past_* inputs")
    error_line(clfuse("generate", g, "--prompt", "1,x", expect=2), "'1,x' is not comma-separated token ids")
    error_line(clfuse("generate", g, "--prompt", "1,2,3", "--steps", "9", "--max-len", "10", expect=2),
               "3 tokens) and 9 steps must fit in --max-len 10")
    error_line(clfuse("generate", g, "--prompt", "1,2,3,4", "--steps", "0", "--max-len", "3", expect=2),
               "the prompt holds more than --max-len 3 tokens")
    error_line(clfuse("generate", g, "--steps", "x", expect=2), "--steps: 'x' is not a count")
    error_line(clfuse("generate", g, "--max-len", "0", expect=2), "--max-len: '0' is not a length")
    error_line(clfuse("plan", expect=2), "no GRAPH")
    error_line(clfuse("plan", g, "--dim", "N=x", expect=2), "--dim N")
    p = clfuse("plan", g, "--dim", "N=4", "--device", "no-such-device-anywhere", expect=None)
    assert p.returncode != 0
    error_line(p, "no-such-device-anywhere")


shutil.rmtree(TMP, ignore_errors=True)
if failures:
    print(f"{len(failures)} failed: {', '.join(failures)}")
    sys.exit(1)
print("all passed")
