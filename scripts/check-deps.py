#!/usr/bin/env python3
"""The kernel's dependency direction (docs/DESIGN.md, "Source layout").

The folders of kernel/ form layers, each of which may use only the layers
before it:

    lib <- arch <- sys (the core) <- intercept, loader <- the features
    (trace, cr, procview, fsview, fakeid) <- cmdline/main

Folders on the same layer do not use each other either. procview lives in
sys/ (sys/procview*) but is a feature.

An edge is a use of one file by another: an #include "x/y.h" (zvisor.h, the
umbrella every file includes, is left out: its own includes are the users'
business), or a symbol one object file takes from another (nm: calls and
data by name, also through a header's inline function). The edges against
the direction are printed; those listed in scripts/deps-allowed.txt are
known and tolerated, any other fails the check (exit 1). An allowed edge
that no longer occurs is reported, so that the list only shrinks.

Usage: check-deps.py [--build DIR] [--allowed FILE] [--all] [--write]
  --all     print every edge against the direction, allowed or not
  --write   rewrite the allow-list with the edges found today
Run after the build (make check-deps): the symbols come from DIR/obj.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = os.path.join(ROOT, "kernel")

# Each module's layer: a module may use only modules of lower layers.
LAYER = {
    "lib": 0,
    "arch": 1,
    "sys": 2,
    "intercept": 3, "loader": 3,
    "trace": 4, "cr": 4, "procview": 4, "fsview": 4, "fakeid": 4,
    "main": 5,
}
UMBRELLA = "zvisor.h"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NM_LINE = re.compile(r"^(.*?\.o):\s*(?:[0-9a-fA-F]+\s+)?(\S)\s+(\S+)$")


def module(rel):
    """The module of a file under kernel/ (rel: its path there)."""
    parts = rel.split("/")
    if len(parts) == 1:
        return "main"
    if parts[0] == "sys" and parts[-1].startswith("procview"):
        return "procview"
    return parts[0]


def sources():
    out = []
    for d, _, files in os.walk(KERNEL):
        for f in files:
            if f.endswith((".c", ".h", ".S")):
                out.append(os.path.relpath(os.path.join(d, f), KERNEL))
    return sorted(out)


def include_edges(files):
    """(user, used, '#include') for every include of a kernel header."""
    known = set(files)
    for rel in files:
        if rel == UMBRELLA:
            continue
        with open(os.path.join(KERNEL, rel), errors="replace") as f:
            text = f.read()
        here = os.path.dirname(rel)
        for name in INCLUDE.findall(text):
            target = name if name in known else os.path.normpath(os.path.join(here, name))
            if target in known and target != UMBRELLA:
                yield rel, target, "#include"


def symbol_edges(build):
    """(user, definer, symbol) for every symbol an object file takes from
    another, from nm over build/obj."""
    objdir = os.path.join(build, "obj")
    objs = []
    for d, _, files in os.walk(objdir):
        for f in files:
            if f.endswith(".o"):
                path = os.path.join(d, f)
                src = os.path.relpath(path, objdir)[:-2]  # sys/mm.c.o -> sys/mm.c
                if os.path.exists(os.path.join(KERNEL, src)):  # not a removed file's leftover
                    objs.append((src, path))
    if not objs:
        sys.exit("check-deps: no object files in %s: build first (make)" % objdir)
    objs.sort()
    r = subprocess.run(["nm", "-A"] + [p for _, p in objs], capture_output=True, text=True)
    if r.returncode:
        sys.exit("check-deps: nm failed: " + r.stderr.strip())
    src_of = {p: s for s, p in objs}
    defined, wanted = {}, []
    for line in r.stdout.splitlines():
        m = NM_LINE.match(line)  # "path.o:[value] type name"
        if not m or m.group(1) not in src_of:
            continue
        path, kind, name = m.groups()
        if kind == "U":
            wanted.append((src_of[path], name))
        elif kind in "TDBRVWCG":
            defined.setdefault(name, src_of[path])
    for user, name in wanted:
        definer = defined.get(name)
        if definer and definer != user:
            yield user, definer, name


def against(user, used):
    a, b = module(user), module(used)
    if a == b:
        return False
    for m in (a, b):
        if m not in LAYER:
            sys.exit("check-deps: kernel/%s: folder %s is in no layer: add it to LAYER in %s"
                     % (user if m == a else used, m, os.path.relpath(__file__, ROOT)))
    return LAYER[b] >= LAYER[a]


def fmt(e):
    return "%s -> %s %s" % e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--allowed", default=os.path.join(ROOT, "scripts", "deps-allowed.txt"))
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()

    files = sources()
    edges = set(include_edges(files)) | set(symbol_edges(args.build))
    bad = sorted((e for e in edges if against(e[0], e[1])), key=lambda e: (module(e[0]), module(e[1]), e))
    lines = [fmt(e) for e in bad]

    if args.write:
        with open(args.allowed, "w") as f:
            f.write("# Known edges against the dependency direction (scripts/check-deps.py):\n"
                    "# user -> used, and the symbol or #include. Remove a line when its\n"
                    "# edge is gone; never add one for new code.\n")
            for l in lines:
                f.write(l + "\n")
        print("check-deps: %d edges written to %s" % (len(lines), os.path.relpath(args.allowed, ROOT)))
        return 0

    allowed = set()
    if os.path.exists(args.allowed):
        with open(args.allowed) as f:
            allowed = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    new = [l for l in lines if l not in allowed]
    gone = sorted(allowed - set(lines))

    if args.all:
        for l in lines:
            print(("  " if l in allowed else "N ") + l)
    groups = {}
    for e in bad:
        k = "%s -> %s" % (module(e[0]), module(e[1]))
        groups[k] = groups.get(k, 0) + 1
    print("check-deps: %d edges against the direction (%d allowed), by modules: %s"
          % (len(bad), len(bad) - len(new), ", ".join("%s %d" % kv for kv in sorted(groups.items()))))
    for l in gone:
        print("check-deps: allowed but gone (remove it from %s): %s" % (os.path.relpath(args.allowed, ROOT), l))
    for l in new:
        print("check-deps: NEW edge against the direction: " + l, file=sys.stderr)
    if new:
        print("check-deps: %d new edges: use the layer list, an event hook or the platform interface "
              "instead (docs/DESIGN.md, 'Source layout')" % len(new), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
