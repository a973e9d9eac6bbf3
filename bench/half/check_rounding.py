#!/usr/bin/env python3
"""Checks a device's f32 -> f16 and f32 -> bf16 rounding bit for bit against
numpy (f16: numpy's astype, round to nearest even; bf16: the same rule on
the high 16 bits), over 2^20 f32 bit patterns biased to the f16 range,
subnormals and exact ties included; NaN must stay NaN. Twice: as stored
(outputs y, z) and as rounded in registers inside a fused kernel, an f16 or
bf16 value cast back to f32 before its store (w, v).

    python3 bench/half/check_rounding.py CLFUSE [--device gpu]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    clfuse = sys.argv[1]
    extra = sys.argv[2:]
    rng = np.random.default_rng(1)
    n = 1 << 20
    bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    e = rng.integers(95, 150, size=n // 2).astype(np.uint32)
    bits[: n // 2] = (bits[: n // 2] & 0x807FFFFF) | (e << 23)
    bits[:4096] = (bits[:4096] & 0xFFFFE000) | 0x1000  # f16 ties
    bits[4096:8192] = (bits[4096:8192] & 0xFFFF0000) | 0x8000  # bf16 ties
    x = bits.view(np.float32)
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "x.npy"), x)
        subprocess.run([clfuse, "run", os.path.join(HERE, "cast_f32_to_half.onnxtxt"), *extra,
                        "--input", "x=" + os.path.join(d, "x.npy"), "--output", "y=" + os.path.join(d, "y.npy"),
                        "--output", "z=" + os.path.join(d, "z.npy"), "--output", "w=" + os.path.join(d, "w.npy"),
                        "--output", "v=" + os.path.join(d, "v.npy")], check=True, stdout=subprocess.DEVNULL)
        y = np.load(os.path.join(d, "y.npy"))
        z = np.load(os.path.join(d, "z.npy")).view(np.uint16)
        w = np.load(os.path.join(d, "w.npy"))
        v = np.load(os.path.join(d, "v.npy"))
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    bad16 = np.count_nonzero(y[~nan].view(np.uint16) != want[~nan].view(np.uint16)) + np.count_nonzero(~np.isnan(y[nan]))
    u = bits.astype(np.uint64)
    wantb = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    isn = np.isnan(x)
    zb = (z.astype(np.uint32) << 16).view(np.float32)
    bad_bf = np.count_nonzero(z[~isn] != wantb[~isn]) + np.count_nonzero(~np.isnan(zb[isn]))
    want32 = want.astype(np.float32)
    bad_w = np.count_nonzero(w[~nan].view(np.uint32) != want32[~nan].view(np.uint32)) + np.count_nonzero(~np.isnan(w[nan]))
    wantv = (wantb.astype(np.uint32) << 16).view(np.float32)
    bad_v = np.count_nonzero(v[~isn].view(np.uint32) != wantv[~isn].view(np.uint32)) + np.count_nonzero(~np.isnan(v[isn]))
    print(f"f16 rounding: {bad16} of {n} differ from numpy; bf16 rounding: {bad_bf} of {n} differ; "
          f"in registers: f16 {bad_w}, bf16 {bad_v} differ")
    return 1 if bad16 or bad_bf or bad_w or bad_v else 0


if __name__ == "__main__":
    sys.exit(main())
