#!/usr/bin/env python3
"""Analyse the ONNX fixtures listed in tests/models/manifest.json -> OPS.md.

For every fixture: op_types with counts, attributes, domains, initializer
dtypes, input/output dtypes and shapes, and which nodes can be constant-folded
(all inputs constant, or Shape/Size of a tensor whose shape is static after
onnx shape inference; the outputs of a folded node are constant in turn, so
Gather/Concat/ConstantOfShape/Range... chains on shapes fold too).

Usage:
  /work/venv-models/bin/python tests/models/analyze_ops.py [--dir tests/models] [--out tests/models/OPS.md]
"""

import argparse
import collections
import json
import os

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

SHORT = {"float32": "f32", "float16": "f16", "float64": "f64", "int64": "i64", "int32": "i32",
         "int8": "i8", "uint8": "u8", "bool": "bool", "bfloat16": "bf16"}
EXP_SHORT = {"torchscript": "ts", "dynamo": "dy"}
NONDETERMINISTIC = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}


def dt(elem_type):
    if not elem_type:
        return "?"
    n = onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    return SHORT.get(n, n)


def shape_of(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]


def fmt_shape(s):
    return "?" if s is None else "[" + ",".join(str(x) for x in s) + "]"


def attr_value(a, op):
    t = a.type
    A = onnx.AttributeProto
    if t == A.INT:
        if a.name == "to" and op == "Cast":
            return dt(a.i)
        return str(a.i)
    if t == A.FLOAT:
        return f"{a.f:.6g}"
    if t == A.STRING:
        return a.s.decode(errors="replace")
    if t == A.INTS:
        return "[" + ",".join(str(x) for x in a.ints) + "]"
    if t == A.FLOATS:
        return "[" + ",".join(f"{x:.6g}" for x in a.floats) + "]"
    if t == A.TENSOR:
        arr = numpy_helper.to_array(a.t)
        d = SHORT.get(arr.dtype.name, arr.dtype.name)
        if arr.size == 1:
            v = arr.reshape(-1)[0]
            if arr.dtype.kind == "f":
                v = f"{float(v):.6g}"
            return f"{d}{list(arr.shape)}={v}"
        return f"{d}{list(arr.shape)}"
    if t in (A.GRAPH, A.GRAPHS):
        return "<graph>"
    return f"<type {t}>"


def analyse(path):
    m = onnx.load(path)
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    g = inferred.graph
    info = {}  # name -> (dtype, shape)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        info[vi.name] = (dt(vi.type.tensor_type.elem_type), shape_of(vi))
    inits = {t.name: t for t in g.initializer}
    for t in g.initializer:
        info[t.name] = (dt(t.data_type), list(t.dims))
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].type == onnx.AttributeProto.TENSOR:
            t = n.attribute[0].t
            info[n.output[0]] = (dt(t.data_type), list(t.dims))

    graph_inputs = {i.name for i in g.input if i.name not in inits}
    const = set(inits) | {""}
    nodes = []
    for n in g.node:
        op = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
        ins = [info.get(x, ("?", None)) if x else ("-", None) for x in n.input]
        outs = [info.get(x, ("?", None)) for x in n.output]
        if n.op_type in NONDETERMINISTIC:
            fold = False
        elif n.op_type == "Constant":
            fold = True
        elif n.op_type in ("Shape", "Size"):
            s = info.get(n.input[0], ("?", None))[1]
            fold = s is not None and all(isinstance(d, int) for d in s) or n.input[0] in const
        else:
            fold = all(x in const for x in n.input)
        if fold:
            const.update(n.output)
        nodes.append({
            "op": op, "domain": n.domain or "ai.onnx", "name": n.name,
            "attrs": {a.name: attr_value(a, n.op_type) for a in n.attribute},
            "sig": ",".join(d for d, _ in ins) + "->" + ",".join(d for d, _ in outs),
            "fold": fold,
            "uses_graph_input": any(x in graph_inputs for x in n.input),
        })
    return m, inferred, nodes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=HERE)
    ap.add_argument("--out")
    a = ap.parse_args()
    out = a.out or os.path.join(a.dir, "OPS.md")
    with open(os.path.join(a.dir, "manifest.json")) as f:
        man = json.load(f)
    fixtures = man["fixtures"]

    per_fix = {}
    ops = collections.OrderedDict()
    for e in fixtures:
        path = os.path.join(a.dir, e["name"], e["model_file"])
        m, inferred, nodes = analyse(path)
        per_fix[e["name"]] = (e, m, inferred, nodes)
        for nd in nodes:
            o = ops.setdefault(nd["op"], {"domain": nd["domain"], "fixtures": collections.Counter(),
                                          "fold": 0, "count": 0, "attrs": collections.defaultdict(set),
                                          "sigs": set(), "groups": set()})
            o["fixtures"][e["name"]] += 1
            o["count"] += 1
            o["fold"] += nd["fold"]
            for k, v in nd["attrs"].items():
                o["attrs"][k].add(v)
            o["sigs"].add(nd["sig"])
            o["groups"].add((e["family"], EXP_SHORT[e["exporter"]]))

    L = []
    w = L.append
    v = man["versions"]
    w("# Ops of the model fixtures\n")
    w("Made by `tests/models/analyze_ops.py` from the fixtures that `tests/models/make_fixtures.py` "
      "writes (see `manifest.json`); do not edit by hand. "
      f"torch {v['torch']}, transformers {v['transformers']}, onnx {v['onnx']}, onnxscript {v['onnxscript']}, "
      f"onnxruntime {v['onnxruntime']}; opset {man['opset']}.\n")
    w("Exporters: `ts` = TorchScript (`torch.onnx.export(..., dynamo=False)`), `dy` = dynamo "
      "(`dynamo=True`, onnxscript, optimize=True). Fixture names are `<family>_<exporter>_<ids|embeds>[_dyn]`; "
      "`_dyn` has symbolic batch and seq.\n")
    w("Folding rule: a node folds when every input is an initializer or the output of a folded node, "
      "or when it is `Shape`/`Size` of a tensor whose shape onnx shape inference (data_prop) finds static. "
      "`fold` counts nodes that fold in that sense; `run` counts nodes left to execute.\n")

    # ---------------------------------------------------------------- fixtures
    w("## Fixtures\n")
    w("| fixture | bytes | IR | opsets | nodes | fold | run | initializers (dtype: count) | inputs | outputs |")
    w("|---|---:|---:|---|---:|---:|---:|---|---|---|")
    total = 0
    for name, (e, m, inferred, nodes) in per_fix.items():
        nf = sum(n["fold"] for n in nodes)
        ic = collections.Counter(dt(t.data_type) for t in m.graph.initializer)
        isz = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
        total += e["fixture_bytes"]
        ins = "; ".join(f"`{i.name}` {dt(i.type.tensor_type.elem_type)}{fmt_shape(shape_of(i))}" for i in m.graph.input)
        outs = "; ".join(f"`{o.name}` {dt(o.type.tensor_type.elem_type)}{fmt_shape(shape_of(o))}" for o in m.graph.output)
        opsets = ",".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in m.opset_import)
        w(f"| {name} | {e['fixture_bytes']} | {m.ir_version} | {opsets} | {len(nodes)} | {nf} | {len(nodes) - nf} | "
          f"{', '.join(f'{k}: {c}' for k, c in sorted(ic.items()))} ({isz} elements) | {ins} | {outs} |")
    w(f"\nTotal: {len(per_fix)} fixtures, {total} bytes (largest {max(e['fixture_bytes'] for e, *_ in per_fix.values())}).\n")
    if man.get("failures"):
        w("Exporter failures (see manifest.json):\n")
        for f_ in man["failures"]:
            w(f"- {f_['name']}: {f_['error'][:400]}")
        w("")
    else:
        w("No exporter failures: both exporters exported every model and input kind (dynamo with its default optimize=True).\n")

    # ---------------------------------------------------------------- op union
    w("## Op union\n")
    w("Every op_type in any fixture (all in the default domain unless a domain is shown). "
      "`used in`: family(exporters); `n`: nodes over all fixtures; `fold`: how many of them fold. "
      "Dtypes are `inputs->outputs` as shape inference types them (`-` an omitted optional input).\n")
    w("| op | used in | fixtures | n | fold | attributes seen | dtypes seen |")
    w("|---|---|---:|---:|---:|---|---|")
    fams = ["llama", "gpt2", "bert"]
    for op in sorted(ops):
        o = ops[op]
        used = " ".join(f"{fa}({','.join(x for x in ('ts', 'dy') if (fa, x) in o['groups'])})"
                        for fa in fams if any(gg[0] == fa for gg in o["groups"]))
        attrs = "<br>".join(f"{k}: {', '.join(sorted(vs)[:12])}{' ...' if len(vs) > 12 else ''}"
                            for k, vs in sorted(o["attrs"].items())) or "-"
        sigs = "<br>".join(sorted(o["sigs"]))
        dom = "" if o["domain"] == "ai.onnx" else f" ({o['domain']})"
        w(f"| {op}{dom} | {used} | {len(o['fixtures'])} | {o['count']} | {o['fold']} | {attrs} | {sigs} |")
    w("")

    w("Where the less obvious ops come from (read off the node names and the dynamo exporter's node metadata):\n")
    notes = [
        ("IsNaN", "scaled_dot_product_attention (transformers' default `sdpa`): both exporters emit "
                  "`Where(IsNaN(Softmax(s)), 0, Softmax(s))` before the second MatMul; `--attn eager` has no IsNaN."),
        ("GatherND", "dynamo: the padding-mask lookup of transformers' mask builder (`attention_mask` cast to bool, "
                     "indexed by batch and kv position) feeding an `And` with the causal part."),
        ("Flatten", "TorchScript: the same padding-mask lookup, as Flatten + Gather on the bool mask."),
        ("Gemm", "GPT-2's Conv1D (`addmm` on the 2-D view of the activations) and BERT's pooler dense (2-D input); "
                 "other Linear layers on 3-D activations are MatMul (+ Add)."),
        ("Split", "GPT-2's fused `c_attn` output split into q, k, v (`num_outputs=3` on the last axis)."),
        ("LayerNormalization", "GPT-2 and BERT LayerNorm (the opset-17 op); Llama's RMSNorm is decomposed into "
                               "Pow, ReduceMean, Add, Sqrt and Div (TorchScript) or Reciprocal + Mul (dynamo)."),
        ("Erf", "BERT's GELU, erf form."),
        ("Tanh", "GPT-2's gelu_new (tanh form, with Pow x^3) and BERT's pooler activation."),
        ("Sigmoid", "Llama's SiLU, as x * Sigmoid(x)."),
        ("Cos", "Llama's rotary embedding (Cos/Sin of positions x inv_freq; they fold when the positions are static)."),
        ("Neg", "Llama's rotate_half (Slice, Neg, Concat)."),
        ("Range", "position ids / mask index ranges, in the dynamic-shape fixtures only (static ones fold them)."),
    ]
    for op, text in notes:
        if op in ops:
            w(f"- {op}: {text}")
    w("")

    # the ops that survive folding
    run_ops = collections.defaultdict(lambda: collections.Counter())
    for name, (e, m, inferred, nodes) in per_fix.items():
        for n in nodes:
            if not n["fold"]:
                run_ops[n["op"]][name] += 1
    w("### Left to execute after folding\n")
    w("The ops a runtime must execute (the rest can be folded at load time from constants and static shapes):\n")
    w("| op | fixtures | nodes |")
    w("|---|---:|---:|")
    for op in sorted(run_ops):
        w(f"| {op} | {len(run_ops[op])} | {sum(run_ops[op].values())} |")
    only_fold = sorted(set(ops) - set(run_ops))
    w(f"\nOps that only ever occur folded: {', '.join(only_fold) if only_fold else 'none'}.\n")

    # ---------------------------------------------------------------- format
    w("## File format details\n")
    w("What a protobuf reader meets besides nodes (a C frontend must at least skip these):\n")
    w("| fixture | IR | producer | functions | value_info | initializer storage | node metadata_props keys | doc_strings |")
    w("|---|---:|---|---:|---:|---|---|---:|")
    for name, (e, m, inferred, nodes) in per_fix.items():
        g = m.graph
        storage = collections.Counter("raw_data" if t.HasField("raw_data") else
                                      ("external" if t.data_location == onnx.TensorProto.EXTERNAL else "typed fields")
                                      for t in g.initializer)
        keys = sorted({p.key for n in g.node for p in n.metadata_props})
        docs = sum(1 for n in g.node if n.doc_string) + (1 if g.doc_string else 0)
        w(f"| {name} | {m.ir_version} | {m.producer_name} {m.producer_version} | {len(m.functions)} | "
          f"{len(g.value_info)} | {', '.join(f'{k} {c}' for k, c in sorted(storage.items()))} | "
          f"{', '.join(keys) if keys else '-'} | {docs} |")
    consts = collections.Counter()
    for name, (e, m, inferred, nodes) in per_fix.items():
        for n in m.graph.node:
            if n.op_type == "Constant":
                consts[n.attribute[0].name if n.attribute else "?"] += 1
    w(f"\nConstant nodes carry their value as: {', '.join(f'{k} ({c})' for k, c in sorted(consts.items()))}. "
      "Sparse initializers: " + str(sum(len(m.graph.sparse_initializer) for _, m, _, _ in per_fix.values())) + ".\n")

    # ---------------------------------------------------------------- per fixture
    w("## Per fixture\n")
    for name, (e, m, inferred, nodes) in per_fix.items():
        c = collections.Counter(n["op"] for n in nodes)
        cf = collections.Counter(n["op"] for n in nodes if n["fold"])
        w(f"### {name}\n")
        w(f"{e['model_class']}, {e['exporter']} exporter, inputs {e['input_kind']}"
          f"{', dynamic batch/seq' if e['dynamic_axes'] else ''}; {len(nodes)} nodes, "
          f"{sum(cf.values())} fold; {len(m.graph.initializer)} initializers; "
          f"model.onnx {e['model_bytes']} B.\n")
        w("Ops (count, folded): " + ", ".join(f"{op} {c[op]}" + (f" ({cf[op]} fold)" if cf[op] else "")
                                              for op in sorted(c)) + ".\n")
        ins = ", ".join(f"`{i['name']}` {SHORT.get(i['graph_dtype'], i['graph_dtype'])}{fmt_shape(i['graph_shape'])}"
                        for i in e["inputs"])
        outs = ", ".join(f"`{o['name']}` {SHORT.get(o['graph_dtype'], o['graph_dtype'])}{fmt_shape(o['graph_shape'])} "
                         f"(ORT vs torch {o['rel_err_vs_torch']:.1e})" for o in e["outputs"])
        w(f"Inputs: {ins}. Outputs: {outs}.\n")
        if e.get("inputs_not_in_graph"):
            w(f"Inputs the exporter dropped: {', '.join(e['inputs_not_in_graph'])}.\n")

    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"wrote {out}: {len(ops)} op types over {len(per_fix)} fixtures")


if __name__ == "__main__":
    main()
