#!/usr/bin/env python3
"""Writes ablations of a generated GEMM kernel (kernel_source gemm N N), so
that cl_kernel_info can time which part of the k-loop bounds it. Their
results are wrong on purpose; only their times mean something.

    gemm_ablations.py KERNEL.cl OUTDIR

Variants (an edit that does not apply is skipped): base (as generated);
noload (no global loads or local stores after the first k-tile: the loop
multiplies the same local tiles); nobarrier (no barrier in the k-loop);
noepi (no epilogue: one conditional store keeps the accumulators live);
nopad (A's local tile without its 4-float row padding); and combinations.
(A "ptr4" variant, vload4 tile loads made float4 pointer loads, found the
GEMM's speed-up; codegen now emits those loads itself, so it is gone.)"""
import sys

from case_variants import write_variants

LOOP_LOADS = ("        if (more) {\n            LOAD_A(k0 + TK)\n            LOAD_B(k0 + TK)\n        }\n",
              "        if (more) {\n            STORE_A(cur ^ 1)\n            STORE_B(cur ^ 1)\n        }\n")
LOOP_BARRIER = "        }\n        barrier(CLK_LOCAL_MEM_FENCE);\n        cur ^= 1;\n"
EPI_START = "    for (int i = 0; i < WM; ++i) {\n        const IDX_T m = m0"


def noload(s):
    return s if not all(p in s for p in LOOP_LOADS) else s.replace(LOOP_LOADS[0], "").replace(LOOP_LOADS[1], "")


def nobarrier(s):
    return s.replace(LOOP_BARRIER, "        }\n        cur ^= 1;\n") if LOOP_BARRIER in s else \
        s.replace("    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n    cur ^= 1;\n", "    }\n    cur ^= 1;\n")


def noepi(s):
    i = s.find(EPI_START)
    if i < 0:
        return s
    end = s.rindex("}")  # the kernel's closing brace
    keep = ("    float4 live = (float4)(0.0f);\n"
            "    for (int i = 0; i < WM; ++i)\n"
            "        for (int j = 0; j < WN / 4; ++j)\n"
            "            live += acc[i][j];\n"
            "    if (live.s0 + live.s1 + live.s2 + live.s3 == 1.2345f)\n"
            "        b3[t] = live.s0;\n")
    return s[:i] + keep + s[end:]


def main():
    src, out = sys.argv[1], sys.argv[2]
    s = open(src).read()
    variants = {
        "base": s, "noload": noload(s), "nobarrier": nobarrier(s), "noepi": noepi(s),
        "nopad": s.replace("#define LDA (TM + 4)", "#define LDA (TM)"),
        "noload_nobarrier": nobarrier(noload(s)), "noload_nobarrier_noepi": noepi(nobarrier(noload(s))),
    }
    write_variants(src, out, s, variants)


if __name__ == "__main__":
    main()
