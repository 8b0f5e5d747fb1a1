#!/usr/bin/env python3
"""The kernel's dependency direction (docs/DESIGN.md, "Source layout").

The folders of kernel/ form layers, each of which may use only the layers
before it:

    lib <- arch <- sys (the core) <- intercept, loader <- the features
    (trace, cr, procview, fsview, fakeid, ptrace, peer) <- cmdline/main

Folders on the same layer do not use each other either. procview lives in
sys/ (sys/procview*) but is a feature. The core reaches the layers above
it only through what they attach: layers and event hooks (sys/layer.h),
exec-state fields (sys/execstate.h) and platforms (sys/platform.h).

An edge is a use of one file by another: an #include "x/y.h" (zvisor.h, the
umbrella every file includes, is left out: its own includes are the users'
business), or a symbol one object file takes from another (nm: calls and
data by name, also through a header's inline function). One kind of
include is part of the rule: a feature's state.h, the plain types of its
state in the core's blocks (struct zv_proc, struct zv_thread), which may
include no kernel header itself. Every other edge against the direction
fails the check (exit 1).

Usage: check-deps.py [--build DIR] [--all]
  --all     also print every edge, with its direction
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
    "trace": 4, "cr": 4, "procview": 4, "fsview": 4, "fakeid": 4, "ptrace": 4, "peer": 4,
    "main": 5,
}
UMBRELLA = "zvisor.h"
STATE = "state.h"  # a feature's state in the core's blocks: plain types
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


def state_header_problems(files):
    """A state.h may include no kernel header: it is the plain types the
    core embeds, nothing it could call."""
    for rel in files:
        if os.path.basename(rel) != STATE:
            continue
        with open(os.path.join(KERNEL, rel), errors="replace") as f:
            for name in INCLUDE.findall(f.read()):
                yield "kernel/%s includes \"%s\": a state.h holds plain types only" % (rel, name)


def against(user, used):
    if os.path.basename(used) == STATE and not user.endswith((".c", ".S")):
        return False  # a core block's embedded feature state (see the docstring)
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
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()

    files = sources()
    edges = set(include_edges(files)) | set(symbol_edges(args.build))
    bad = sorted((e for e in edges if against(e[0], e[1])), key=lambda e: (module(e[0]), module(e[1]), e))
    problems = list(state_header_problems(files))

    if args.all:
        for e in sorted(edges, key=lambda e: (module(e[0]), module(e[1]), e)):
            if module(e[0]) != module(e[1]):
                print(("N " if e in bad else "  ") + fmt(e))
    for e in bad:
        print("check-deps: edge against the direction: " + fmt(e), file=sys.stderr)
    for p in problems:
        print("check-deps: " + p, file=sys.stderr)
    if bad or problems:
        print("check-deps: %d edges against the direction: use the layer list, an event hook, an exec "
              "field or the platform interface instead (docs/DESIGN.md, 'Source layout')" % len(bad),
              file=sys.stderr)
        return 1
    print("check-deps: %d edges between modules, none against the direction" %
          sum(1 for e in edges if module(e[0]) != module(e[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
