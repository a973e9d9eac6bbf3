#!/usr/bin/env python3
"""Runs examples/generate_kv (or `clfuse generate`) on the KV-cache fixture
and checks that the tokens it generates are onnxruntime's (the fixture's
decode steps feed the tokens onnxruntime chose).
Usage: check_generate_kv.py GENERATE_KV|CLFUSE FIXTURE_DIR (a program named
clfuse is run as `clfuse generate`)."""
import json
import os
import struct
import subprocess
import sys


def last_token(path):
    """The last int64 of a C-order .npy file (format 1.0/2.0)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path}: not a .npy file")
    return struct.unpack("<q", data[-8:])[0]


def main():
    exe, fixture = sys.argv[1], sys.argv[2]
    with open(os.path.join(fixture, "fixture.json")) as f:
        meta = json.load(f)
    steps = len(meta["steps"]) - 1
    want = [last_token(os.path.join(fixture, f"step{k}_input_input_ids.npy")) for k in range(1, steps + 1)]
    prompt = ",".join(str(t) for t in meta["prompt"])
    cmd = [exe, "generate"] if os.path.basename(exe) == "clfuse" else [exe]
    out = subprocess.run([*cmd, os.path.join(fixture, "model.onnx"), "--prompt", prompt, "--steps", str(steps),
                          "--max-len", "16"], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    lines = [l for l in out.stdout.splitlines() if l.startswith("generated:")]
    got = [int(t) for t in lines[0].split()[1:]] if lines else []
    print(out.stdout)
    if got != want:
        sys.exit(f"generated {got}, onnxruntime chose {want}")
    print(f"ok: {got} as onnxruntime")


if __name__ == "__main__":
    main()
