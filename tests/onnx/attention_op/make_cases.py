#!/usr/bin/env python3
"""Cases of ONNX's Attention op (opset 23) for test_onnx's
attention_op_cases: for each case a model (case<i>.onnx), its inputs
(case<i>_in<j>.npy) and the outputs of onnx's reference implementation
(case<i>_out<j>.npy), checked against onnxruntime where it runs the op.

    python3 tests/onnx/attention_op/make_cases.py   (onnx >= 1.18, numpy;
                                                    onnxruntime optional)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(23)

F32, F16, BOOL = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BOOL
NP = {F32: np.float32, F16: np.float16, BOOL: np.bool_}


def case(inputs, attrs, outputs=("y",)):
    """inputs: (name, elem, array) in the op's order (None name: absent)."""
    names = [n if n else "" for n, _, _ in inputs]
    node = helper.make_node("Attention", names, list(outputs), **attrs)
    ins = [helper.make_tensor_value_info(n, e, a.shape) for n, e, a in inputs if n]
    feeds = {n: a for n, _, a in inputs if n}

    def model(shapes):
        outs = [helper.make_tensor_value_info(o, inputs[0][1], sh) for o, sh in zip(outputs, shapes)]
        m = helper.make_model(helper.make_graph([node], "attention_op", ins, outs),
                              opset_imports=[helper.make_opsetid("", 23)])
        m.ir_version = 10
        return m

    want = ReferenceEvaluator(model([None] * len(outputs))).run(None, feeds)
    m = model([w.shape for w in want])
    onnx.checker.check_model(m, full_check=True)
    return m, [a for n, _, a in inputs if n], want


def rand(shape, elem=F32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(NP[elem])


CASES = []
# 0: 4-D MHA, no mask, default scale.
CASES.append(case([("q", F32, rand((2, 2, 5, 8))), ("k", F32, rand((2, 2, 7, 8))), ("v", F32, rand((2, 2, 7, 4)))],
                  {}))
# 1: 4-D GQA (4 query heads on 2), causal, an additive mask [B, 1, S, S], a scale.
CASES.append(case([("q", F32, rand((2, 4, 6, 8))), ("k", F32, rand((2, 2, 6, 8))), ("v", F32, rand((2, 2, 6, 8))),
                   ("m", F32, rand((2, 1, 6, 6), lo=-2.0, hi=0.0))], {"is_causal": 1, "scale": 0.3}))
# 2: 3-D MQA (q_num_heads 4, kv_num_heads 1), causal, a bool key-padding mask [B, 1, S, T]
# (not [B, 1, 1, T]: onnx 1.23's reference then builds its causal mask one query high, so
# that every query sees key 0 only, and onnxruntime refuses a mask of one query).
pad = np.ones((2, 1, 5, 5), np.bool_)
pad[1, 0, :, 3:] = False
CASES.append(case([("q", F32, rand((2, 5, 32))), ("k", F32, rand((2, 5, 8))), ("v", F32, rand((2, 5, 8))),
                   ("m", BOOL, pad)], {"is_causal": 1, "q_num_heads": 4, "kv_num_heads": 1}))
# 3: a past of 3 positions and 2 new ones, causal, GQA, the presents as outputs.
CASES.append(case([("q", F32, rand((1, 4, 2, 8))), ("k", F32, rand((1, 2, 2, 8))), ("v", F32, rand((1, 2, 2, 8))),
                   (None, F32, None), ("pk", F32, rand((1, 2, 3, 8))), ("pv", F32, rand((1, 2, 3, 8)))],
                  {"is_causal": 1}, ("y", "present_key", "present_value")))
# 4: f16, 4-D, a per-head additive mask [1, H, S, T].
CASES.append(case([("q", F16, rand((1, 2, 4, 16), F16)), ("k", F16, rand((1, 2, 9, 16), F16)),
                   ("v", F16, rand((1, 2, 9, 16), F16)), ("m", F16, rand((1, 2, 4, 9), F16, -1.0, 0.0))], {}))
# 5: a float mask narrower than the keys ([B, 1, S, 4] for 7 keys): ONNX pads it with -inf.
CASES.append(case([("q", F32, rand((2, 2, 5, 8))), ("k", F32, rand((2, 2, 7, 8))), ("v", F32, rand((2, 2, 7, 8))),
                   ("m", F32, rand((2, 1, 5, 4), lo=-2.0, hi=0.0))], {}))
# 6: a bool key-padding mask narrower than the keys ([B, 1, 1, 5] for 7 keys): padded with false.
short = np.ones((2, 1, 1, 5), np.bool_)
short[0, 0, 0, 1] = False
CASES.append(case([("q", F32, rand((2, 2, 3, 8))), ("k", F32, rand((2, 2, 7, 8))), ("v", F32, rand((2, 2, 7, 8))),
                   ("m", BOOL, short)], {}))
# 7: causal with more keys than queries and no past: ONNX aligns on the past (none), top-left.
CASES.append(case([("q", F32, rand((1, 2, 3, 8))), ("k", F32, rand((1, 2, 5, 8))), ("v", F32, rand((1, 2, 5, 8)))],
                  {"is_causal": 1}))
# 8: causal, a past of 2 and 4 new keys for 2 queries, an additive mask: query i sees keys up to i + 2.
CASES.append(case([("q", F32, rand((1, 2, 2, 8))), ("k", F32, rand((1, 2, 4, 8))), ("v", F32, rand((1, 2, 4, 8))),
                   ("m", F32, rand((1, 1, 2, 6), lo=-2.0, hi=0.0)), ("pk", F32, rand((1, 2, 2, 8))),
                   ("pv", F32, rand((1, 2, 2, 8)))], {"is_causal": 1}, ("y", "present_key", "present_value")))
# 9: causal, a past of 1 and 3 new keys for 2 queries, a bool mask hiding key 1 of query 1.
bmask = np.ones((1, 1, 2, 4), np.bool_)
bmask[0, 0, 1, 1] = False
CASES.append(case([("q", F32, rand((1, 2, 2, 8))), ("k", F32, rand((1, 2, 3, 8))), ("v", F32, rand((1, 2, 3, 8))),
                   ("m", BOOL, bmask), ("pk", F32, rand((1, 2, 1, 8))), ("pv", F32, rand((1, 2, 1, 8)))],
                  {"is_causal": 1}))


def main():
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    for i, (m, ins, want) in enumerate(CASES):
        onnx.save(m, os.path.join(HERE, f"case{i}.onnx"))
        for j, a in enumerate(ins):
            np.save(os.path.join(HERE, f"case{i}_in{j}.npy"), a)
        for j, a in enumerate(want):
            np.save(os.path.join(HERE, f"case{i}_out{j}.npy"), a)
        if ort is not None:
            try:
                s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
                names = [x.name for x in s.get_inputs()]
                got = s.run(None, dict(zip(names, ins)))
                err = max(float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) for g, w in zip(got, want))
                print(f"case {i}: onnxruntime agrees within {err:.2e}")
            except Exception as e:  # noqa: BLE001 (an onnxruntime without the op)
                print(f"case {i}: onnxruntime: {str(e).splitlines()[0]}")
        else:
            print(f"case {i}: written (no onnxruntime to compare)")


if __name__ == "__main__":
    main()
