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
geometry: LANES L, WG W, CACHE adjusted to cover the row); gsN: N
work-groups looping over the row groups (a persistent grid); copy: a
float4 copy of the same bytes (copy_cs: with streaming hints); ldX_stY:
float4 loads and stores with PTX cache hints (NVIDIA); shfl: lanes combine
by warp shuffles (inline PTX, NVIDIA) instead of local memory."""
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


SHFL = """static inline float shfl_xor(float v, int m)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
}
"""


def shfl(s):
    """The row's lanes combine their partial results by warp shuffles
    (inline PTX, NVIDIA), butterfly steps of LANES / 2 .. 1, instead of
    local memory and a barrier; every field of every accumulator a float."""
    generated = s[:s.index("/* ---- kernels_templates/")]
    accs = re.findall(r"typedef struct \{\n((?:    float \w+;\n)+)\} clf_acc(\d+);", generated)
    if define(s, "LANES") > 32 or not accs or len(accs) != len(re.findall(r"\} clf_acc\d+;", generated)):
        return s
    fns = SHFL
    for fields, k in accs:
        names = re.findall(r"float (\w+);", fields)
        fns += "static inline clf_acc%s shfl_acc%s(clf_acc%s a, int m)\n{\n    clf_acc%s r;\n" % (k, k, k, k)
        fns += "".join("    r.%s = shfl_xor(a.%s, m);\n" % (f, f) for f in names) + "    return r;\n}\n"
    stage = re.search(r"        __local clf_acc##k \*part = .*?        clf_finish##k\(&row, &total\);", s, re.S)
    if not stage:
        return s
    lines = ["        for (int m = LANES / 2; m > 0; m /= 2) {",
             "            const clf_acc##k o = shfl_acc##k(a, m);",
             "            clf_combine##k(&a, &o);",
             "        }",
             "        clf_finish##k(&row, &a);"]
    body = "".join("%-95s\\\n" % l for l in lines[:-1]) + lines[-1]
    s = s[:stage.start()] + body + s[stage.end():]
    i = s.index("/* ---- kernels_templates/")
    return s[:i] + fns + s[i:]


def gridstride(s, groups):
    """Launches GROUPS work-groups that loop over the row groups (a
    persistent grid) instead of one work-group per row group. The launch
    size goes in a GRID_GROUPS comment for cases_gpu.sh."""
    head = "    const IDX_T x0 = (IDX_T)get_group_id(0) * (IDX_T)ROWS_PER_WG + (IDX_T)(lid / LANES);\n"
    tail = "    if (lane == 0)\n        clf_rowout(&row, x, CLF_ARGS);\n}"
    if head not in s or tail not in s or "    if (!valid)\n        return;\n" not in s or define(s, "NSTAGES") < 2:
        return s
    s = s.replace(head, "    for (IDX_T grp = (IDX_T)get_group_id(0); grp * (IDX_T)ROWS_PER_WG < nrows;\n"
                  "         grp += (IDX_T)get_num_groups(0)) {\n"
                  "    const IDX_T x0 = grp * (IDX_T)ROWS_PER_WG + (IDX_T)(lid / LANES);\n")
    s = s.replace("    if (!valid)\n        return;\n", "    if (valid) {\n")
    s = s.replace(tail, "    if (lane == 0)\n        clf_rowout(&row, x, CLF_ARGS);\n    }\n    }\n}")
    return "/* GRID_GROUPS %d */\n" % groups + s


COPY = """/* A float4 copy of the same bytes: the same-size roofline. */
#define RLEN %du
#define LANES %d
#define WG 256
#define CLF_PARAMS __global const float4 *restrict a, __global float4 *restrict b
__kernel void copy4(CLF_PARAMS, const uint nrows)
{
    const size_t i = get_global_id(0);
    b[i] = a[i];
}
"""


PTX_HINTS = """/* Loads and stores with PTX cache hints (NVIDIA only). */
static inline float4 ld_hint(const __global float4 *p)
{
    float x, y, z, w;
    asm volatile("ld.global.%s.v4.f32 {%%0, %%1, %%2, %%3}, [%%4];" : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "l"(p));
    return (float4)(x, y, z, w);
}
static inline void st_hint(__global float4 *p, float4 v)
{
    asm volatile("st.global.%s.v4.f32 [%%0], {%%1, %%2, %%3, %%4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
"""


def hints(s, ld, st):
    """Float4 loads and stores through inline PTX with cache hints (ld, st:
    'cs' streaming, 'lu' last use, 'nc' read-only path, 'wb' default...)."""
    s2 = re.sub(r"= \*\(const __global float4 \*\)\(([^;]*)\);", r"= ld_hint((const __global float4 *)(\1));", s) if ld else s
    s2 = re.sub(r"\*\(__global float4 \*\)\((b\d+ \+ t\d+)\) = \(float4\)\((.*)\);", r"st_hint((__global float4 *)(\1), (float4)(\2));", s2) if st else s2
    if s2 == s:
        return s
    i = s2.index("static inline")
    return s2[:i] + PTX_HINTS % (ld or "ca", st or "wb") + "\n" + s2[i:]


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
    variants = {"base": s, "nokahan": nokahan(s), "fmax": fmax(s), "mulinv": mulinv(s)}
    variants["nokahan_fmax_mulinv"] = mulinv(fmax(nokahan(s)))
    variants["mulinvg"] = mulinvg(s)
    variants["carry"] = carry(s)
    variants["carry_mulinvg"] = carry(mulinvg(s))
    variants["shfl"] = shfl(s)
    variants["shfl_wg64"] = geometry(shfl(s), define(s, "LANES"), 64)
    variants["shfl_carry"] = shfl(carry(s))
    lanes = define(s, "LANES")
    if define(s, "VEC") == 4:
        copy = COPY % (define(s, "RLEN"), define(s, "RLEN") // 4)
        variants["copy"] = copy
        variants["copy_cs"] = copy.replace("b[i] = a[i];", "st_hint(b + i, ld_hint(a + i));").replace(
            "__kernel", PTX_HINTS % ("cs", "cs") + "__kernel")
        for ld, st in (("", "cs"), ("cs", ""), ("cs", "cs"), ("nc", ""), ("lu", "cs"), ("nc", "cs")):
            variants["ld%s_st%s" % (ld, st)] = hints(s, ld, st)
    for groups in (132 * 8, 132 * 16, 132 * 32):
        variants["gs%d" % groups] = gridstride(s, groups)
        variants["gs%d_lanes%d_wg256" % (groups, lanes)] = gridstride(geometry(s, lanes, 256), groups)
    for l, w in ((lanes, 64), (lanes, 128), (lanes // 2, 64), (lanes // 2, 128), (lanes // 2, 256), (lanes * 2, 256)):
        if 1 <= l <= 1024 and l <= w:
            variants["lanes%d_wg%d" % (l, w)] = geometry(s, l, w)
            variants["carry_mulinvg_lanes%d_wg%d" % (l, w)] = geometry(carry(mulinvg(s)), l, w)
            variants["carry_lanes%d_wg%d" % (l, w)] = geometry(carry(s), l, w)
            variants["mulinvg_lanes%d_wg%d" % (l, w)] = geometry(mulinvg(s), l, w)
    write_variants(src, out, s, variants)


def write_variants(src, out, s, variants):
    """Writes OUT/<stem of SRC>_<name>.cl for the base and for each variant
    whose edit applied (its text differs from the base's, S)."""
    stem = os.path.splitext(os.path.basename(src))[0]
    os.makedirs(out, exist_ok=True)
    for name, text in variants.items():
        if name == "base" or text != s:
            with open(os.path.join(out, "%s_%s.cl" % (stem, name)), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
