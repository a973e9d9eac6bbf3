#!/usr/bin/env python3
"""Build the real-model ONNX fixtures of issue 15 (tiny HF Llama, GPT-2, BERT).

Each model is a HuggingFace transformers model built from a tiny config with
random weights (fixed seeds, no download; HF's init is replaced by a wider
seeded one, since std 0.02 weights make the outputs nearly input-independent),
exported with both PyTorch ONNX exporters:

  torchscript  torch.onnx.export(..., dynamo=False)
  dynamo       torch.onnx.export(..., dynamo=True, external_data=False)

from token ids (input_ids int64, plus attention_mask / token_type_ids where
the model takes them) and from input embeddings (inputs_embeds f32), with
use_cache=False, opset 18, static shapes (batch 2, seq 8; the second batch row
is right-padded by attention_mask). Every fixture directory holds

  <family>_<exporter>_<ids|embeds>[_dyn]/
      model.onnx             weights inside the file (no external data)
      input_<name>.npy       the inputs fed to the model
      output_<name>.npy      onnxruntime's (CPU EP) outputs, named after the
                             ONNX graph outputs (logits, last_hidden_state, ...)

and <outdir>/manifest.json lists every fixture (inputs and outputs with dtype
and shape, exporter, opset, config, versions, ORT-vs-PyTorch error) plus any
exporter failure. The script checks that ORT's outputs match PyTorch's and
prints the normwise relative error ||ort - torch|| / ||torch|| per output.
With --dtype f16 (see Options) the same models are exported in float16 to
<name>_f16/ directories and manifest_f16.json.

Usage (venv outside the repo, see tests/models/requirements.txt):

  python3 -m venv /work/venv-models
  /work/venv-models/bin/pip install -r tests/models/requirements.txt
  /work/venv-models/bin/python tests/models/make_fixtures.py            # tiny fixtures -> tests/models/
  /work/venv-models/bin/python tests/models/analyze_ops.py              # -> tests/models/OPS.md
  /work/venv-models/bin/python tests/models/make_fixtures.py --size bench --outdir /tmp/bench-fixtures
                      # 4 exports of the benchmark Llama, ~3.3 GB, ~3 min on 2 cores
  /work/venv-models/bin/python tests/models/make_fixtures.py --dtype f16
                      # the tiny fixtures in float16 (on a GPU machine: PyTorch on cuda)

Options:
  --size tiny|bench   tiny (default): the committed fixtures, each < 1 MB.
                      bench: one Llama-shaped stack (hidden 2048, 2 layers,
                      32 heads / 4 kv heads, vocab 32000, batch 1, seq 512, f32)
                      for benchmarks; ~0.9 GB per model, never commit it;
                      --outdir is required and must lie outside tests/.
  --outdir DIR        where fixtures go (default tests/models for tiny).
  --families ...      subset of llama gpt2 bert.
  --exporters ...     subset of torchscript dynamo.
  --inputs ...        subset of ids embeds.
  --[no-]dynamic      also export a dynamic-axes variant (batch and seq
                      symbolic) of each ids fixture, as <name>_dyn (default:
                      on for tiny, off for bench). Its input_/output_ files
                      use the static shape (2, 8); alt_input_/alt_output_
                      files hold a second set at batch 3, seq 5.
  --attn IMPL         attention implementation of transformers (default
                      sdpa, transformers' default; eager is the other choice).
  --threads N         torch / onnxruntime threads (default 1).
  --dtype f32|f16     f32 (default): the fixtures above. f16: the same models
                      (same seeds, configs and inputs) converted with
                      .half() before export, so that every weight is a
                      float16 initializer and inputs_embeds a float16 input;
                      PyTorch runs the half model on --device, onnxruntime's
                      outputs on the saved inputs are the reference. Fixture
                      directories get a _f16 suffix (llama_dynamo_ids_f16)
                      and are listed in manifest_f16.json, never in
                      manifest.json (whose fixtures tests/test_models.py runs
                      at a float32 tolerance); inputs_embeds and float
                      outputs are saved as float16 .npy ('<f2').
  --device auto|cpu|cuda
                      where PyTorch builds, runs and exports the model:
                      auto (default) is cpu for f32 (as the committed
                      fixtures were made) and cuda, where available, for f16.
  --ort-provider cpu|cuda
                      onnxruntime's execution provider for the reference
                      outputs (default cpu: CPUExecutionProvider; cuda needs
                      onnxruntime-gpu). Float16 nodes without a CPU kernel
                      run in float32 behind Casts onnxruntime inserts.
  --max-rel-err X     fail a fixture whose onnxruntime output is off
                      PyTorch's by a normwise relative error of X or more
                      (default 1e-4 for f32, 2e-2 for f16: float16 rounds at
                      each op, differently in the two).

Re-running is deterministic: same seeds, inputs and weights, and with the same
package versions byte-identical files (model.onnx, .npy, manifest.json). For
that the dynamo exporter's per-node stack traces (absolute paths and line
numbers) are stripped from its model.onnx; its other node metadata stays. A
fixture directory is removed and rewritten on each run; fixtures not selected
by the flags keep their manifest entries. A tiny fixture over 1 MB, an ORT
output off PyTorch's by a relative error of 1e-4 or more, or an exporter that
writes external data fails the run (exit 1, recorded under "failures";
for f16 the error bound is --max-rel-err's).
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 18
MAX_TINY_BYTES = 1 << 20

FAMILIES = ("llama", "gpt2", "bert")
EXPORTERS = ("torchscript", "dynamo")
INPUT_KINDS = ("ids", "embeds")


# --------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------

def tiny_configs():
    return {
        # GQA: 4 query heads, 2 kv heads, head_dim 8; rotary; RMSNorm; SiLU MLP
        "llama": dict(
            vocab_size=128, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0,
            hidden_act="silu", tie_word_embeddings=False),
        # Conv1D, fused c_attn qkv split, gelu_new (tanh form), tied lm_head
        "gpt2": dict(
            vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64,
            n_inner=128, activation_function="gelu_new",
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
        # GELU erf form, word + position + token-type embeddings, pooler
        "bert": dict(
            vocab_size=128, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=64, hidden_act="gelu",
            max_position_embeddings=64, type_vocab_size=2,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    }


def bench_configs():
    return {
        "llama": dict(
            vocab_size=32000, hidden_size=2048, intermediate_size=5632,
            num_hidden_layers=2, num_attention_heads=32, num_key_value_heads=4,
            max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
            hidden_act="silu", tie_word_embeddings=False),
    }


SHAPES = {"tiny": dict(batch=2, seq=8), "bench": dict(batch=1, seq=512)}
ALT_SHAPE = (3, 5)  # batch, seq of the second input set of the _dyn fixtures
SEEDS = {"llama": 1501, "gpt2": 1502, "bert": 1503}
DTYPES = ("f32", "f16")
MAX_REL_ERR = {"f32": 1e-4, "f16": 2e-2}


class Precision:
    """What --dtype, --device, --ort-provider and --max-rel-err chose for a run."""

    def __init__(self, dtype="f32", device="cpu", ort_provider="cpu", max_rel_err=None):
        self.dtype = dtype
        self.device = device
        self.ort_provider = ort_provider
        self.max_rel_err = MAX_REL_ERR[dtype] if max_rel_err is None else max_rel_err

    @property
    def suffix(self):
        return "" if self.dtype == "f32" else "_" + self.dtype

    @property
    def manifest(self):
        return "manifest.json" if self.dtype == "f32" else f"manifest_{self.dtype}.json"

    def np_float(self):
        return np.float32 if self.dtype == "f32" else np.float16

    def convert(self, model):
        """The model on self.device, in float16 for f16 (every parameter and buffer: .half())."""
        model = model.to(self.device)
        return model.half() if self.dtype == "f16" else model

    def providers(self):
        if self.ort_provider == "cuda":
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]
        return ["CPUExecutionProvider"]

    def describe(self):
        return {"dtype": self.dtype, "torch_device": self.device, "ort_providers": self.providers(),
                "max_rel_err_vs_torch": self.max_rel_err}

    def entry_fields(self):
        """Manifest fields of a fixture: none for f32, so that its manifest.json stays as before."""
        return {} if (self.dtype, self.device, self.ort_provider) == ("f32", "cpu", "cpu") else self.describe()


def resolve_device(want, dtype):
    import torch
    if want == "auto":
        return "cuda" if dtype == "f16" and torch.cuda.is_available() else "cpu"
    if want == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch.cuda.is_available() is False")
    return want


def build_model(family, cfg, attn):
    import torch
    import transformers as tf
    torch.manual_seed(SEEDS[family])
    if family == "llama":
        config = tf.LlamaConfig(**cfg)
        cls = tf.LlamaForCausalLM
    elif family == "gpt2":
        config = tf.GPT2Config(**cfg)
        cls = tf.GPT2LMHeadModel
    elif family == "bert":
        config = tf.BertConfig(**cfg)
        cls = tf.BertModel
    else:
        raise ValueError(family)
    config._attn_implementation = attn
    model = cls(config)
    # HF inits Linear weights with std 0.02, which makes the attention nearly
    # uniform and the outputs nearly input-independent; rescale every
    # parameter to a wider spread (still seeded) so the fixtures discriminate.
    g = torch.Generator().manual_seed(SEEDS[family] + 100)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            lname = name.lower()
            is_norm = "norm" in lname or ".ln_" in lname
            if p.dim() >= 2:
                std = 1.0 if ("emb" in lname or ".wte." in lname or ".wpe." in lname) else p.shape[-1] ** -0.5
                p.copy_(std * torch.randn(p.shape, generator=g))
            elif is_norm and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    model.eval()
    return model, config


def make_wrapper(model, family, kind):
    """Fixed positional signature and tuple outputs for torch.onnx.export."""
    import torch

    main_in = "input_ids" if kind == "ids" else "inputs_embeds"
    if family == "bert":
        in_names = [main_in, "attention_mask", "token_type_ids"]
        out_names = ["last_hidden_state", "pooler_output"]
    else:
        in_names = [main_in, "attention_mask"]
        out_names = ["logits"]

    def call(m, kw):
        if family != "bert":
            kw["use_cache"] = False
        out = m(**kw, return_dict=True)
        return tuple(getattr(out, n) for n in out_names)

    # explicit positional parameters (not *args), so that torch.export's
    # dynamic_shapes can name one spec per input
    if len(in_names) == 2:
        class W(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x, attention_mask):
                return call(self.m, {in_names[0]: x, "attention_mask": attention_mask})
    else:
        class W(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x, attention_mask, token_type_ids):
                return call(self.m, {in_names[0]: x, "attention_mask": attention_mask,
                                     "token_type_ids": token_type_ids})

    return W(model).eval(), in_names, out_names


def make_inputs(family, kind, config, batch, seq, float_type=np.float32):
    """The inputs; inputs_embeds drawn in float32 and, for f16 fixtures, rounded to float_type."""
    rng = np.random.RandomState(SEEDS[family] + (0 if kind == "ids" else 7))
    hidden = config.hidden_size
    d = {}
    if kind == "ids":
        d["input_ids"] = rng.randint(0, config.vocab_size, size=(batch, seq)).astype(np.int64)
    else:
        d["inputs_embeds"] = rng.standard_normal((batch, seq, hidden)).astype(np.float32).astype(float_type)
    mask = np.ones((batch, seq), dtype=np.int64)
    if batch > 1:
        mask[1, seq - max(1, seq // 4):] = 0   # right padding on row 1
    d["attention_mask"] = mask
    if family == "bert":
        tt = np.zeros((batch, seq), dtype=np.int64)
        tt[:, seq // 2:] = 1
        d["token_type_ids"] = tt
    return d


# --------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------

def export_one(wrapper, args, in_names, out_names, exporter, path, dynamic):
    import torch
    if exporter == "torchscript":
        kw = {}
        if dynamic:
            kw["dynamic_axes"] = {n: ({0: "batch", 1: "seq"}) for n in in_names}
            for n in out_names:
                kw["dynamic_axes"][n] = {0: "batch"} if n == "pooler_output" else {0: "batch", 1: "seq"}
        torch.onnx.export(wrapper, args, path, dynamo=False, opset_version=OPSET,
                          input_names=in_names, output_names=out_names,
                          do_constant_folding=True, **kw)
        return {"exporter_options": {"dynamo": False, "do_constant_folding": True}}
    tried = []
    attempts = [dict(optimize=True), dict(optimize=False)]
    last = None
    for opt in attempts:
        kw = {}
        if dynamic:
            b = torch.export.Dim("batch", min=1, max=64)
            s = torch.export.Dim("seq", min=2, max=64)
            kw["dynamic_shapes"] = tuple({0: b, 1: s} for _ in in_names)
        try:
            prog = torch.onnx.export(wrapper, args, None, dynamo=True, opset_version=OPSET,
                                     input_names=in_names, output_names=out_names,
                                     external_data=False, **opt, **kw)
            prog.save(path, external_data=False)
            stripped = strip_stack_traces(path)
            return {"exporter_options": dict(dynamo=True, external_data=False, **opt),
                    "failed_attempts": tried, "stripped_node_metadata": stripped}
        except Exception as e:  # noqa: BLE001 - record and try the next option
            last = e
            tried.append({"options": opt, "error": f"{type(e).__name__}: {clean(str(e))[:2000]}"})
            print(f"    dynamo export with {opt} failed: {type(e).__name__}: {str(e)[:300]}")
    raise RuntimeError(json.dumps(tried)) from last


def strip_stack_traces(path):
    """Drop the dynamo exporter's per-node Python stack traces.

    They hold absolute paths and line numbers of this script and of the
    installed packages (more than half of each file), so the bytes would
    change with the checkout's place and any edit. The other node metadata
    (namespace, class hierarchy, fx node, name scopes) stays, as exported.
    """
    import onnx
    m = onnx.load(path)
    key = "pkg.torch.onnx.stack_trace"
    n = 0

    def walk(graph):
        nonlocal n
        for node in graph.node:
            keep = [p for p in node.metadata_props if p.key != key]
            if len(keep) != len(node.metadata_props):
                n += 1
                del node.metadata_props[:]
                node.metadata_props.extend(keep)
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)

    walk(m.graph)
    for f in m.functions:
        for node in f.node:
            keep = [p for p in node.metadata_props if p.key != key]
            del node.metadata_props[:]
            node.metadata_props.extend(keep)
    onnx.save(m, path)
    return [key] if n else []


def clean(msg):
    """Drop ANSI colour codes from exporter messages."""
    return re.sub(r"\x1b\[[0-9;]*m", "", msg)


def rel_err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    den = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (den if den > 0 else 1.0))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def versions():
    import onnx
    import onnxruntime
    import onnxscript
    import torch
    import transformers
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxscript": onnxscript.__version__, "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__}


def run_fixture(family, exporter, kind, dynamic, cfg, shape, attn, outdir, threads, size, prec=None):
    import onnx
    import onnxruntime as ort
    import torch

    prec = prec or Precision()
    name = f"{family}_{exporter}_{kind}" + ("_dyn" if dynamic else "") + prec.suffix
    fdir = os.path.join(outdir, name)
    print(f"== {name}")
    if os.path.isdir(fdir):
        shutil.rmtree(fdir)
    os.makedirs(fdir)

    model, config = build_model(family, cfg, attn)
    model = prec.convert(model)   # built in float32 with the f32 fixtures' seeds, then .half() for f16
    wrapper, in_names, out_names = make_wrapper(model, family, kind)
    inputs = make_inputs(family, kind, config, shape["batch"], shape["seq"], prec.np_float())
    assert list(inputs) == in_names, (list(inputs), in_names)
    args = tuple(torch.from_numpy(inputs[n]).to(prec.device) for n in in_names)
    with torch.no_grad():
        ref = [t.detach().cpu().numpy() for t in wrapper(*args)]

    path = os.path.join(fdir, "model.onnx")
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = export_one(wrapper, args, in_names, out_names, exporter, path, dynamic)
    t_export = time.time() - t0
    if any(f.endswith(".data") for f in os.listdir(fdir)):
        raise RuntimeError("exporter wrote external data")

    m = onnx.load(path)
    onnx.checker.check_model(m)
    g_in = [i.name for i in m.graph.input]
    g_out = [o.name for o in m.graph.output]
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=prec.providers())
    feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
    unused = sorted(set(in_names) - set(feed))
    outs = sess.run(None, feed)
    ort_names = [o.name for o in sess.get_outputs()]
    assert ort_names == g_out, (ort_names, g_out)

    def onnx_io(vi):
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]
        return onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name, dims

    entry = {
        "name": name, "family": family, "exporter": exporter, "input_kind": kind, **prec.entry_fields(),
        "dynamic_axes": dynamic, "opset": OPSET, "attn_implementation": attn,
        "model_class": type(model).__name__, "config": cfg, "size": size,
        "seed": SEEDS[family], "model_file": "model.onnx",
        "model_bytes": os.path.getsize(path), "model_sha256": sha256(path),
        "inputs": [], "outputs": [],
    }
    entry.update(info)
    if unused:
        entry["inputs_not_in_graph"] = unused
    for n in in_names:
        if n not in g_in:
            continue
        fn = f"input_{n}.npy"
        np.save(os.path.join(fdir, fn), inputs[n])
        gd, gs = onnx_io(next(i for i in m.graph.input if i.name == n))
        entry["inputs"].append({"name": n, "dtype": str(inputs[n].dtype), "shape": list(inputs[n].shape),
                                "graph_dtype": gd, "graph_shape": gs, "file": fn})
    if len(out_names) != len(g_out):
        raise RuntimeError(f"graph outputs {g_out} != {out_names}")
    for i, (n, o) in enumerate(zip(g_out, outs)):
        fn = f"output_{n}.npy"
        np.save(os.path.join(fdir, fn), o)
        e = rel_err(o, ref[i])
        gd, gs = onnx_io(m.graph.output[i])
        entry["outputs"].append({"name": n, "dtype": str(o.dtype), "shape": list(o.shape),
                                 "graph_dtype": gd, "graph_shape": gs, "file": fn,
                                 "rel_err_vs_torch": e,
                                 "max_abs_err_vs_torch": float(np.max(np.abs(o.astype(np.float64) - ref[i])))})
        print(f"    {n} {list(o.shape)}: ||ort - torch|| / ||torch|| = {e:.3e}")
        if not e < prec.max_rel_err:
            raise RuntimeError(f"ORT output {n} differs from PyTorch: rel err {e:.3e}")
    if dynamic:
        # a second shape, to show the graph is not tied to the traced one
        alt = make_inputs(family, kind, config, *ALT_SHAPE, prec.np_float())
        with torch.no_grad():
            alt_ref = [t.detach().cpu().numpy()
                       for t in wrapper(*(torch.from_numpy(alt[n]).to(prec.device) for n in in_names))]
        alt_outs = sess.run(None, {i.name: alt[i.name] for i in sess.get_inputs()})
        entry["alt_inputs"], entry["alt_outputs"] = [], []
        for n in in_names:
            if n in g_in:
                fn = f"alt_input_{n}.npy"
                np.save(os.path.join(fdir, fn), alt[n])
                entry["alt_inputs"].append({"name": n, "dtype": str(alt[n].dtype), "shape": list(alt[n].shape), "file": fn})
        for i, (n, o) in enumerate(zip(g_out, alt_outs)):
            fn = f"alt_output_{n}.npy"
            np.save(os.path.join(fdir, fn), o)
            e = rel_err(o, alt_ref[i])
            entry["alt_outputs"].append({"name": n, "dtype": str(o.dtype), "shape": list(o.shape), "file": fn,
                                         "rel_err_vs_torch": e})
            print(f"    alt {n} {list(o.shape)}: ||ort - torch|| / ||torch|| = {e:.3e}")
            if not e < prec.max_rel_err:
                raise RuntimeError(f"ORT output {n} (alt shape) differs from PyTorch: rel err {e:.3e}")
    entry["fixture_bytes"] = sum(os.path.getsize(os.path.join(fdir, f)) for f in os.listdir(fdir))
    print(f"    model.onnx {entry['model_bytes']} B, fixture {entry['fixture_bytes']} B, export {t_export:.1f} s")
    if size == "tiny" and entry["fixture_bytes"] >= MAX_TINY_BYTES:
        raise RuntimeError(f"{name} is {entry['fixture_bytes']} B, over the 1 MB limit")
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=("tiny", "bench"), default="tiny")
    ap.add_argument("--outdir")
    ap.add_argument("--families", nargs="+", choices=FAMILIES)
    ap.add_argument("--exporters", nargs="+", choices=EXPORTERS, default=list(EXPORTERS))
    ap.add_argument("--inputs", nargs="+", choices=INPUT_KINDS, default=list(INPUT_KINDS))
    ap.add_argument("--dynamic", action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=DTYPES, default="f32")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--ort-provider", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--max-rel-err", type=float)
    a = ap.parse_args()

    import torch
    torch.set_num_threads(a.threads)
    prec = Precision(a.dtype, resolve_device(a.device, a.dtype), a.ort_provider, a.max_rel_err)
    print("precision:", json.dumps(prec.describe()))

    if a.size == "tiny":
        cfgs = tiny_configs()
        outdir = os.path.abspath(a.outdir or HERE)
    else:
        cfgs = bench_configs()
        if not a.outdir:
            ap.error("--size bench needs --outdir (outside the repository's tests/)")
        outdir = os.path.abspath(a.outdir)
        if outdir == os.path.join(REPO, "tests") or outdir.startswith(os.path.join(REPO, "tests") + os.sep):
            ap.error("--size bench must not write under tests/")
    families = a.families or [f for f in FAMILIES if f in cfgs]
    for f in families:
        if f not in cfgs:
            ap.error(f"no {a.size} config for {f}")
    os.makedirs(outdir, exist_ok=True)
    shape = SHAPES[a.size]
    if a.dynamic is None:
        a.dynamic = a.size == "tiny"

    man_path = os.path.join(outdir, prec.manifest)
    old = {}
    if os.path.exists(man_path):
        with open(man_path) as f:
            prev = json.load(f)
        old = {e["name"]: e for e in prev.get("fixtures", []) + prev.get("failures", [])}

    vers = versions()
    print("versions:", json.dumps(vers))
    done, failures = {}, {}
    for fam in families:
        for exp in a.exporters:
            for kind in a.inputs:
                variants = [False] + ([True] if a.dynamic and kind == "ids" else [])
                for dyn in variants:
                    name = f"{fam}_{exp}_{kind}" + ("_dyn" if dyn else "") + prec.suffix
                    try:
                        e = run_fixture(fam, exp, kind, dyn, cfgs[fam], shape, a.attn, outdir, a.threads, a.size,
                                        prec)
                        e["versions"] = vers
                        done[name] = e
                    except Exception as ex:  # noqa: BLE001 - recorded in the manifest
                        traceback.print_exc()
                        failures[name] = {"name": name, "family": fam, "exporter": exp, "input_kind": kind,
                                          "dynamic_axes": dyn, "opset": OPSET, "attn_implementation": a.attn,
                                          **prec.entry_fields(),
                                          "error": f"{type(ex).__name__}: {clean(str(ex))[:4000]}", "versions": vers}
                        fdir = os.path.join(outdir, name)
                        if os.path.isdir(fdir):
                            shutil.rmtree(fdir)

    for k in list(done) + list(failures):
        old.pop(k, None)
    fixtures = sorted([e for e in old.values() if "error" not in e] + list(done.values()), key=lambda e: e["name"])
    fails = sorted([e for e in old.values() if "error" in e] + list(failures.values()), key=lambda e: e["name"])
    manifest = {
        "description": "Real-model ONNX fixtures of issue 15, made by tests/models/make_fixtures.py; "
                       "outputs are onnxruntime's (CPU EP) on the saved inputs.",
        "size": a.size, "shape": shape, "opset": OPSET, "versions": vers,
        "fixtures": fixtures, "failures": fails,
        "total_bytes": sum(e["fixture_bytes"] for e in fixtures),
    }
    if prec.entry_fields():
        half = " (models converted with .half() before export)" if prec.dtype == "f16" else ""
        manifest["description"] = (
            f"Real-model ONNX fixtures of issue 15 in {prec.dtype}{half}, PyTorch on {prec.device}, made by "
            f"tests/models/make_fixtures.py --dtype {prec.dtype}; outputs are onnxruntime's "
            f"({', '.join(prec.providers())}) on the saved inputs.")
        manifest["precision"] = prec.describe()
    with open(man_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"\n{len(fixtures)} fixtures, {manifest['total_bytes']} B in all; {len(fails)} failures -> {man_path}")
    for e in fails:
        print(f"  FAILED {e['name']}: {e['error'][:300]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
