#!/usr/bin/env python3
"""The KV-cache fixture of issue 19: make_fixtures.py's tiny HF Llama
(2 layers, 4 heads / 2 KV heads of 8, same seeds) exported with
use_cache=True by the TorchScript exporter (torch.onnx.export, dynamo=False,
opset 18), with the past keys and values as inputs and the present ones as
outputs:

  inputs   input_ids [1, seq] int64, attention_mask [1, total] int64,
           position_ids [1, seq] int64,
           past_key.<i>, past_value.<i> [1, 2, past, 8] f32 (layers i = 0, 1)
  outputs  logits [1, seq, 128], present_key.<i>, present_value.<i>
           [1, 2, total, 8]     (total = past + seq: Concat(past, new))

into tests/models/llama_torchscript_kv/: model.onnx, and for a prompt of 6
tokens then 3 greedy decode steps (prompt: past 0 is not exportable, so the
prompt is fed as a past of 1 position from a first step of 1 token):

  step<k>_input_<name>.npy    the inputs of step k (k = 0 .. 4)
  step<k>_output_<name>.npy   onnxruntime's outputs of step k

Step 0 feeds token 0 with a past of 0 positions is not possible in ONNX
(zero-size inputs), so step 0 is a one-token run with an all-zero past of
one position masked out (attention_mask 0 there); steps 1.. extend it.
PyTorch's outputs are checked against onnxruntime's. Usage (see
make_fixtures.py for the venv):

  python tests/models/make_kv_fixture.py [--outdir DIR]
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402

PROMPT = [5, 17, 33, 2, 91, 64]
DECODE_STEPS = 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--outdir", default=os.path.join(HERE, "llama_torchscript_kv"))
    a = ap.parse_args()
    import torch
    import onnxruntime as ort
    from transformers import DynamicCache

    torch.set_num_threads(1)
    model, config = mf.build_model("llama", mf.tiny_configs()["llama"], "sdpa")
    nl = config.num_hidden_layers
    kvh = config.num_key_value_heads
    hd = config.hidden_size // config.num_attention_heads

    class KV(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache()
            for i in range(nl):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True, return_dict=True)
            pkv = out.past_key_values
            presents = []
            for i in range(nl):
                layer = pkv.layers[i]
                presents += [layer.keys, layer.values]
            return (out.logits, *presents)

    wrapper = KV(model).eval()
    past_names = [f"past_{kv}.{i}" for i in range(nl) for kv in ("key", "value")]
    present_names = [f"present_{kv}.{i}" for i in range(nl) for kv in ("key", "value")]
    in_names = ["input_ids", "attention_mask", "position_ids"] + past_names
    out_names = ["logits"] + present_names
    dyn = {"input_ids": {1: "seq"}, "attention_mask": {1: "total"}, "position_ids": {1: "seq"},
           "logits": {1: "seq"}}
    for n in past_names:
        dyn[n] = {2: "past"}
    for n in present_names:
        dyn[n] = {2: "total"}

    def inputs_for(ids, past_kv, total_mask, start):
        s = len(ids)
        feed = {"input_ids": np.array([ids], dtype=np.int64),
                "attention_mask": np.array([total_mask], dtype=np.int64),
                "position_ids": np.arange(start, start + s, dtype=np.int64)[None]}
        for n, t in zip(past_names, past_kv):
            feed[n] = t
        return feed

    # Export at past 3, seq 2.
    ex = inputs_for([1, 2], [np.zeros((1, kvh, 3, hd), np.float32)] * (2 * nl), [1] * 5, 3)
    args = tuple(torch.from_numpy(ex[n]) for n in in_names)
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, "model.onnx")
    torch.onnx.export(wrapper, args, path, dynamo=False, opset_version=mf.OPSET, input_names=in_names,
                      output_names=out_names, dynamic_axes=dyn, do_constant_folding=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

    # Step 0: the prompt after a masked past of one zero position; then
    # greedy steps of one token.
    past = [np.zeros((1, kvh, 1, hd), np.float32)] * (2 * nl)
    mask = [0]
    ids = PROMPT
    start = 0
    worst = 0.0
    steps = []
    for k in range(1 + DECODE_STEPS):
        mask = mask + [1] * len(ids)
        feed = inputs_for(ids, past, mask, start)
        outs = sess.run(None, feed)
        with torch.no_grad():
            ref = wrapper(*(torch.from_numpy(feed[n]) for n in in_names))
        for o, r in zip(outs, ref):
            r = r.numpy()
            worst = max(worst, float(np.linalg.norm(o - r) / max(np.linalg.norm(r), 1e-30)))
        for n, v in feed.items():
            np.save(os.path.join(a.outdir, f"step{k}_input_{n}.npy"), v)
        for n, v in zip(out_names, outs):
            np.save(os.path.join(a.outdir, f"step{k}_output_{n}.npy"), v)
        steps.append({"seq": len(ids), "past": int(past[0].shape[2]), "total": len(mask)})
        past = outs[1:]
        start += len(ids)
        ids = [int(np.argmax(outs[0][0, -1]))]
    with open(os.path.join(a.outdir, "fixture.json"), "w") as f:
        json.dump({"steps": steps, "inputs": in_names, "outputs": out_names, "ort_vs_torch_rel_err": worst,
                   "versions": mf.versions(), "prompt": PROMPT}, f, indent=1)
    print(f"{a.outdir}: {len(steps)} steps, ORT vs torch {worst:.2e}")
    if worst > 1e-4:
        sys.exit("ORT and PyTorch disagree")


if __name__ == "__main__":
    main()
