#!/usr/bin/env python3
"""Writes hand-edited variants of a generated GPU reduction kernel, so that
cl_kernel_info can time what one change to the generated code is worth.

    case_variants.py KERNEL.cl OUTDIR

Variants (each a text edit of the generated source; a variant whose edit
does not apply is skipped): base (as generated); nokahan (compensated sums
made plain); fmax (the NaN-aware max made fmax); mulinv (division by a row
value made a multiplication by its reciprocal; mulinvg: only where the
divisor's magnitude makes it exact enough); carry (softmax's exp computed
once, the cached row rewritten by the sum stage); lanesL_wgW (another
geometry: LANES L, WG W, CACHE adjusted to cover the row)."""
import os
import re
import sys


def nokahan(s):
    s = re.sub(r"    \{\n        const float4 y = \(float4\)\((.*?)\) - a->c(\d+);\n        const float4 t = a->s\2 \+ y;\n"
               r"        a->c\2 = isfinite\(t\) \? \(t - a->s\2\) - y : 0.0f;\n        a->s\2 = t;\n    \}\n",
               lambda m: "    a->s%s += (float4)(%s);\n" % (m.group(2), m.group(1)), s)
    return re.sub(r"    \{\n        const float y = \((.*?)\) - a->c(\d+);\n        const float t = a->s\2 \+ y;\n"
                  r"        a->c\2 = isfinite\(t\) \? \(t - a->s\2\) - y : 0.0f;\n        a->s\2 = t;\n    \}\n",
                  lambda m: "    a->s%s += (%s);\n" % (m.group(2), m.group(1)), s)


def fmax(s):
    return re.sub(r"a->s(\d+) = (v->l\d+) > a->s\1 \|\| isnan\(\2\) \? \2 : a->s\1;", r"a->s\1 = fmax(a->s\1, \2);", s)


def mulinv(s):
    return re.sub(r"\((v\d+) / (row->r\d+)\)", r"(\1 * (1.0f / \2))", s)


def mulinvg(s):
    """The reciprocal only where it is exact enough: |divisor| in [2^-126, 2^126]."""
    return re.sub(r"\((v\d+) / (row->r\d+)\)",
                  r"((fabs(\2) >= 0x1p-126f && fabs(\2) <= 0x1p126f) ? \1 * (1.0f / \2) : \1 / \2)", s)


def carry(s):
    """Softmax's exp(x - max) computed once: the sum stage rewrites the
    cached units in place, and the sum and the epilogue read them."""
    pat = ("    const float4 v0 = (v->l0 - row->r1); /* sub */\n"
           "    const float4 v1 = exp(v0); /* exp */\n")
    if define(s, "CACHE") == 0 or s.count(pat) != 2:
        return s
    s = s.replace(pat + "    a->s4 += (float4)(v1);", "    a->s4 += v->l0;")
    s = s.replace(pat, "    const float4 v1 = v->l0;\n")
    return s.replace("#if NSTAGES > 1\n    CLF_STAGE(1)",
                     "#if NSTAGES > 1\n    if (valid) {\n#pragma unroll\n        for (int c = 0; c < CACHE; ++c)\n"
                     "            cache[c].l0 = exp(cache[c].l0 - row.r1);\n    }\n    CLF_STAGE(1)")


def define(s, name):
    return int(re.search(r"#define %s (\d+)" % name, s).group(1))


def geometry(s, lanes, wg):
    units = define(s, "RLEN") // define(s, "VEC")
    cache = -(-units // lanes) if define(s, "CACHE") else 0
    for name, v in (("LANES", lanes), ("WG", wg), ("CACHE", cache)):
        s = re.sub(r"#define %s \d+\n" % name, "#define %s %d\n" % (name, v), s, count=1)
    return s


def main():
    src, out = sys.argv[1], sys.argv[2]
    s = open(src).read()
    stem = os.path.splitext(os.path.basename(src))[0]
    os.makedirs(out, exist_ok=True)
    variants = {"base": s, "nokahan": nokahan(s), "fmax": fmax(s), "mulinv": mulinv(s)}
    variants["nokahan_fmax_mulinv"] = mulinv(fmax(nokahan(s)))
    variants["mulinvg"] = mulinvg(s)
    variants["carry"] = carry(s)
    variants["carry_mulinvg"] = carry(mulinvg(s))
    lanes = define(s, "LANES")
    for l, w in ((lanes, 64), (lanes, 128), (lanes // 2, 64), (lanes // 2, 128), (lanes // 2, 256), (lanes * 2, 256)):
        if 1 <= l <= 1024 and l <= w:
            variants["lanes%d_wg%d" % (l, w)] = geometry(s, l, w)
            variants["carry_mulinvg_lanes%d_wg%d" % (l, w)] = geometry(carry(mulinvg(s)), l, w)
    for name, text in variants.items():
        if name == "base" or text != s:
            with open(os.path.join(out, "%s_%s.cl" % (stem, name)), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
