"""Writes the markdown table of bench/run_attention_gpu.sh (and of
run_attention_cpu.sh, with --torch-device cpu) from its work folder: cases.tsv (name, bench_attention options, the torch case it is
compared with), clf_NAME.txt and clf_NAME.rc (bench_attention's output and
exit status) and torch.log (torch_attention.py's output). A case that failed
or never ran says so in its cells; nothing here fails on a missing file.

    python3 make_table.py --work DIR --mode quick|final --out FILE [--torch-device cuda|cpu] [--note TEXT ...]"""
import argparse
import os
import re


def results(text):
    """The RESULT lines of text as dicts of their key=value pairs."""
    out = []
    for line in text.splitlines():
        if line.startswith("RESULT "):
            out.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
    return out


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def ms(r):
    return float(r["median_ms"]) if r and r.get("ok") == "1" and "median_ms" in r else None


def cell(r, what):
    """A time cell: the median, or why there is none."""
    if r is None:
        return f"no result ({what})"
    if r.get("ok") != "1":
        if "median_ms" in r:  # timed, but its result was wrong
            return f"{float(r['median_ms']):.4f} WRONG (error {r.get('rel_err', r.get('max_err', '?'))})"
        return f"FAILED ({r.get('why', '?')})"
    return f"{float(r['median_ms']):.4f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--mode", default="quick")
    p.add_argument("--out", required=True)
    p.add_argument("--note", action="append", default=[])
    p.add_argument("--torch-device", default="cuda", choices=("cuda", "cpu"))
    a = p.parse_args()
    cpu = a.torch_device == "cpu"
    cases = []
    for line in (read(os.path.join(a.work, "cases.tsv")) or "").splitlines():
        f = line.split("\t")
        if len(f) >= 2:
            cases.append((f[0], f[1], f[2] if len(f) > 2 and f[2] else f[0]))
    torch_log = read(os.path.join(a.work, "torch.log"))
    torch_res = {(r.get("case"), r.get("impl")): r for r in results(torch_log or "")}
    tl = [l for l in (torch_log or "").splitlines() if l.strip()]
    torch_head = next((l for l in tl if l.startswith("torch ")), None)
    if torch_head is None:  # it never got going: say why (its last line)
        torch_head = f"torch did not run: {tl[-1][:200] if tl else 'no output'}"
    device = "?"
    rows = []
    for name, opts, tname in cases:
        text = read(os.path.join(a.work, f"clf_{name}.txt"))
        rc = (read(os.path.join(a.work, f"clf_{name}.rc")) or "").strip()
        if text:
            m = re.search(r"^device: (.*)$", text, re.M)
            device = m.group(1) if m and device == "?" else device
        res = {r.get("variant"): r for r in results(text or "")}
        fused, unfused = res.get("fused"), res.get("unfused")
        why = "did not run" if text is None else ("timed out" if rc in ("124", "137") else f"exit {rc or '?'}")
        clf_cell = cell(fused, why)
        if fused is None and text is not None and rc not in ("124", "137"):
            last = [l for l in text.splitlines() if l.strip()][-1:] or ["no output"]
            clf_cell = f"FAILED ({why}: {last[0][:80]})"
        sd, co = torch_res.get((tname, "sdpa")), torch_res.get((tname, "compile"))
        kern = " / ".join(x.get("kernels", "?") if x else "?" for x in (fused, sd, co))
        unf = ""
        if unfused is not None:
            unf = f"{cell(unfused, '')} ({unfused.get('kernels', '?')})"
        check = ""
        if fused is not None and "max_err" in fused:
            check = f"{'ok' if fused.get('ok') == '1' else 'WRONG'} {float(fused['max_err']):.1e}"
        perf = ""
        if ms(fused):
            perf = f"{float(fused['tflops']):.{3 if cpu else 1}f} / {float(fused['gbs']):.{1 if cpu else 0}f}"
        rows.append(
            f"| {name} | {clf_cell} | {cell(sd, 'torch')} | {cell(co, 'torch')} | {ratio(ms(fused), ms(sd))} | "
            f"{ratio(ms(fused), ms(co))} | {kern} | {perf} | {unf} | {check} | `{opts}` |")
    lines = [
        f"# Attention{' on the CPU' if cpu else ''}: libclfuse against PyTorch SDPA and torch.compile ({a.mode})",
        "",
        f"libclfuse device: {device}. {torch_head}.",
        *[n for n in a.note if n],
        "",
        "Medians in ms (libclfuse: OpenCL profiling events, first kernel start to last kernel end of one run; "
        + ("torch: the host's clock around each call, which allocates its output (libclfuse writes into buffers "
           "it already has)" if cpu else "torch: CUDA events around each call")
        + "); ratio = libclfuse / torch (below 1: libclfuse faster). "
        + ("" if cpu else "f32 is f32 on both sides (no TF32: torch.backends.cuda.matmul.allow_tf32 = False). ")
        + "kernels: libclfuse's fused plan / SDPA / torch.compile (torch's from its profiler, one call"
        + ("; not counted on the CPU: -). " if cpu else "). ") +
        "TFLOP/s count 4·B·H·Sq·Sk·D (halved for causal with Sq = Sk); GB/s q, k, v read once and the output "
        "written once. check: libclfuse against a double-precision host reference on sampled rows "
        "(max |err| / (1 + |ref|)). Minimum times and every detail are in clfuse.log and torch.log.",
        "",
        "| case | libclfuse ms | SDPA ms | torch.compile ms | ratio vs SDPA | ratio vs compile | kernels "
        "(clf / SDPA / compile) | libclfuse TFLOP/s / GB/s | unfused ms (kernels) | check | options |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
