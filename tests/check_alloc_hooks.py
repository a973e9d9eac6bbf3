#!/usr/bin/env python3
"""Fails when library code allocates or frees host memory around the
allocator hook (clf_set_allocator): every C source and header under src/
other than src/util/alloc.c (which implements the hook) must call
clf__malloc, clf__calloc, clf__realloc, clf__free and clf__strdup, never the
C library's malloc, calloc, realloc, free, strdup, strndup, aligned_alloc or
posix_memalign. A block from one allocator freed by the other corrupts the
caller's heap (codegen_reduction.c once freed a clf__ block with free()).

Comments, string and character literals are blanked before matching, and a
name only counts as a call when no identifier character, '.' or '->' comes
right before it (clf__free, sb->free(...) and my_free() are not calls of
free). Before checking the tree, the script checks itself on samples that it
must flag and samples that it must not: a matcher that flags nothing fails.

    check_alloc_hooks.py SRC_DIR
Exit status: 0 clean, 1 on a direct call (each printed as file:line), 2 on
bad usage or a failed self-check.
"""
import os
import re
import sys

FORBIDDEN = ("malloc", "calloc", "realloc", "free", "strdup", "strndup", "aligned_alloc", "posix_memalign")
EXEMPT = {os.path.join("util", "alloc.c")}
CALL = re.compile(r"(?<![\w.])(?<!->)\b(" + "|".join(FORBIDDEN) + r")\s*\(")


def blank(text):
    """text with comments and literals replaced by spaces, newlines kept
    (so that line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def direct_calls(text):
    """(line, name) of each direct call in C source text."""
    code = blank(text)
    return [(code.count("\n", 0, m.start()) + 1, m.group(1)) for m in CALL.finditer(code)]


def self_check():
    must_flag = [
        "void f(void) { char *p = malloc(4); free(p); }",
        "x = realloc (x, 8);",
        "s = strdup(t);",
        "p = calloc(1,\n 2);",
        "if (ok) free(p); /* clf__free(p) */",
        "q = (char *)strndup(s, 3);",
    ]
    must_pass = [
        "/* free(p) and malloc(3) in a comment */",
        "// free(p)",
        'puts("free(p)"); char c = \'(\';',
        "clf__free(p); clf__malloc(4); clf__strdup(s); clf__realloc(p, 2); clf__calloc(1, 2);",
        "clf__sb_free(&sb); my_free(p); e->free(p); e.free(p); t->staging_free = NULL;",
        "static clf_free_fn a_free = free;",
    ]
    for s in must_flag:
        if not direct_calls(s):
            print("check_alloc_hooks.py: self-check: did not flag: %s" % s)
            return False
    for s in must_pass:
        if direct_calls(s):
            print("check_alloc_hooks.py: self-check: flagged: %s" % s)
            return False
    return True


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_alloc_hooks.py SRC_DIR")
        return 2
    if not self_check():
        return 2
    root = argv[1]
    found, files = [], 0
    for d, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(d, name)
            rel = os.path.relpath(path, root)
            if rel in EXEMPT:
                continue
            files += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                for line, fn in direct_calls(f.read()):
                    found.append("%s:%d: %s() called directly; use clf__%s (src/util/alloc.h, strbuf.h)"
                                 % (os.path.join(root, rel), line, fn, fn if fn in FORBIDDEN[:5] else "malloc"))
    if files == 0:
        print("check_alloc_hooks.py: no C sources under %s" % root)
        return 2
    for f in found:
        print(f)
    if found:
        return 1
    print("check_alloc_hooks.py: %d files, every allocation goes through the clf__ hooks" % files)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
