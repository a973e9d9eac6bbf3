#!/usr/bin/env python3
"""Checks that the ABI is what the public headers say it is.

Three sets of names must be equal:
  - the functions declared with CLF_API in include/clfuse/*.h, after
    expanding the X-macro lists that generate builders (clf_neg, clf_add, ...);
  - the names listed under global: in the linker version script;
  - the functions libclfuse.so actually exports (nm -D --defined-only).

Usage: check_exports.py --headers DIR --map FILE [--lib LIBFILE]
       check_exports.py --headers DIR --emit-map   (prints a version script)
Without --lib only the headers and the map are compared.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

IDENT = r"[A-Za-z_]\w*"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_args(text, start):
    """Splits the argument list whose '(' is at text[start]; returns
    (args, index after the closing ')')."""
    depth, args, cur = 0, [], []
    i = start
    while i < len(text):
        c = text[i]
        lit = re.match(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", text[i:])
        if lit:  # commas and parentheses inside literals are not syntax
            cur.append(lit.group(0))
            i += len(lit.group(0))
            continue
        if c == "(":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i + 1
            cur.append(c)
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    raise ValueError("unbalanced parentheses in macro invocation")


def expand(text, macros):
    """Expands invocations of the given function-like macros until none is
    left. Enough of the preprocessor for X-macros: parameters, ## pasting,
    nested invocations; no # stringizing, no object-like macros."""
    call = re.compile(r"\b(" + "|".join(map(re.escape, macros)) + r")\s*\(") if macros else None
    for _ in range(100000):  # a guard against recursion, not a budget: the X-macro lists expand to hundreds
        m = call.search(text) if call else None
        if not m:
            return text
        params, body = macros[m.group(1)]
        args, end = split_args(text, m.end() - 1)
        if args == [""] and not params:
            args = []
        if len(args) != len(params):
            raise ValueError(f"{m.group(1)}: {len(params)} parameters, {len(args)} arguments")
        binding = dict(zip(params, args))
        out = re.sub(IDENT, lambda t: binding.get(t.group(0), t.group(0)), body)
        out = re.sub(r"\s*##\s*", "", out)
        text = text[: m.start()] + " " + out + " " + text[end:]
    raise ValueError("macro expansion did not terminate")


def header_functions(header_dir):
    """Names of the CLF_API functions declared in header_dir/*.h."""
    macros, code = {}, []
    headers = sorted(glob.glob(os.path.join(header_dir, "*.h")))
    if not headers:
        raise SystemExit(f"no headers in {header_dir}")
    for path in headers:
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read()).replace("\\\n", " ")
        for line in text.splitlines():
            d = re.match(r"\s*#\s*define\s+(CLF_\w+)\(([^)]*)\)(.*)", line)
            if d:
                # Only the library's own uppercase CLF_ macros: the X lists and
                # their declaration helpers.
                params = [p.strip() for p in d.group(2).split(",") if p.strip()]
                macros[d.group(1)] = (params, d.group(3))
            elif not re.match(r"\s*#", line):
                code.append(line)
    code = expand("\n".join(code), macros)
    names = set()
    for decl in re.finditer(r"\bCLF_API\b([^;{(]*)\(", code):
        words = re.findall(IDENT, decl.group(1))
        if not words:
            raise SystemExit(f"cannot parse declaration: CLF_API{decl.group(1)}(")
        names.add(words[-1])
    return names


def map_names(path):
    """Names listed under global: in a version script. Globs are reported,
    not matched: the script must list every function."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", " ", strip_comments(f.read()))
    names, globs = set(), []
    for section in re.finditer(r"global\s*:(.*?)(?:local\s*:|\})", text, flags=re.S):
        for entry in section.group(1).split(";"):
            entry = entry.strip()
            if not entry:
                continue
            if re.search(r"[*?\[]", entry):
                globs.append(entry)
            else:
                names.add(entry)
    return names, globs


def library_exports(lib):
    nm = os.environ.get("NM", "nm")
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        if kind == "A":  # version node names such as CLFUSE_0
            continue
        names.add(name.split("@")[0])
    return names


def diff(label_a, a, label_b, b):
    lines = []
    for n in sorted(a - b):
        lines.append(f"  {n}: in {label_a}, not in {label_b}")
    for n in sorted(b - a):
        lines.append(f"  {n}: in {label_b}, not in {label_a}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headers", required=True)
    ap.add_argument("--map")
    ap.add_argument("--lib")
    ap.add_argument("--emit-map", action="store_true")
    a = ap.parse_args()

    api = header_functions(a.headers)
    if a.emit_map:
        print("/* The ABI of libclfuse: every CLF_API function, nothing else. */")
        print("CLFUSE_0 {\n  global:")
        for n in sorted(api):
            print(f"    {n};")
        print("  local:\n    *;\n};")
        return 0

    problems = []
    if a.map:
        listed, globs = map_names(a.map)
        problems += [f"  glob '{g}' in the version script: list names instead" for g in globs]
        problems += diff("headers", api, "version script", listed)
    if a.lib:
        try:
            exported = library_exports(a.lib)
        except FileNotFoundError:
            print("nm not found", file=sys.stderr)
            return 77
        problems += diff("headers", api, "library exports", exported)

    if problems:
        print("ABI mismatch:")
        print("\n".join(problems))
        return 1
    compared = ["headers"] + (["version script"] if a.map else []) + (["library exports"] if a.lib else [])
    print(f"{len(api)} public functions; agree: {', '.join(compared)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
