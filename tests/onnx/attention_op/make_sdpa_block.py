#!/usr/bin/env python3
"""A block as PyTorch's dynamo exporter writes it at opset 23 (test_onnx's
attention_op_exported_block): RMSNorm, q/k/v projections, causal GQA
scaled_dot_product_attention (4 query heads on 2 KV heads, written as ONNX
Attention), the output projection, tanh-approximated GELU (Gelu with
approximate="tanh") and a residual. Writes sdpa_block23.onnx,
sdpa_block23_x.npy and onnxruntime's output sdpa_block23_y.npy.

    python3 tests/onnx/attention_op/make_sdpa_block.py   (torch, onnxscript, onnxruntime)
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(64, 64)
        self.k = torch.nn.Linear(64, 32)
        self.v = torch.nn.Linear(64, 32)
        self.o = torch.nn.Linear(64, 64)
        self.norm = torch.nn.RMSNorm(64)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.norm(x)
        q = self.q(h).view(b, s, 4, 16).transpose(1, 2)
        k = self.k(h).view(b, s, 2, 16).transpose(1, 2)
        v = self.v(h).view(b, s, 2, 16).transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        y = self.o(a.transpose(1, 2).reshape(b, s, 64))
        return torch.nn.functional.gelu(y, approximate="tanh") + x


def main():
    torch.manual_seed(0)
    m = Block().eval()
    x = torch.randn(2, 7, 64)
    path = os.path.join(HERE, "sdpa_block23.onnx")
    torch.onnx.export(m, (x,), dynamo=True, opset_version=23).save(path)
    model = onnx.load(path)
    ops = sorted({n.op_type for n in model.graph.node})
    assert "Attention" in ops and "Gelu" in ops, ops
    name = model.graph.input[0].name
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {name: x.numpy()})[0]
    print("ops:", ops, "onnxruntime against torch:", float(np.abs(y - m(x).detach().numpy()).max()))
    np.save(os.path.join(HERE, "sdpa_block23_x.npy"), x.numpy())
    np.save(os.path.join(HERE, "sdpa_block23_y.npy"), y)


if __name__ == "__main__":
    main()
