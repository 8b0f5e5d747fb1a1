#!/usr/bin/env python3
"""The cost of `zvisor run --root` per path call: bench/pathcalls.c's loops
run in a chroot (the native figure; root only), under zvisor with --root,
and under zvisor without --root on the same tree by its host paths (the
cost of zvisor alone), in pairs; and the host calls zvisor makes per guest
call (strace -f -c of zvisor's process, N and 2N iterations: the
difference over N).

  python3 bench/fsview.py [--reps 7] [--iters 20000] [--ops stat_abs,...]

Prints a markdown table: per op, native ns, zvisor --root ns and its ratio
(median of per-pair ratios, with the minimum of each side), zvisor alone,
and host calls per op (native: 1).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ZVISOR = os.path.join(REPO, "build", "zvisor")
PROG = os.path.join(REPO, "build", "bench", "pathcalls")


def build():
    os.makedirs(os.path.dirname(PROG), exist_ok=True)
    src = os.path.join(HERE, "pathcalls.c")
    if not os.path.exists(PROG) or os.path.getmtime(PROG) < os.path.getmtime(src):
        subprocess.run(["gcc", "-O2", "-static", "-o", PROG, src], check=True)


def make_root(base):
    root = os.path.join(base, "root")
    for d in ("zvb/a/b/c", "usr/lib/zvb", "proc", "dev", "sys", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in ("zvb/a/b/c/file", "usr/lib/zvb/file"):
        open(os.path.join(root, f), "w").write("x\n")
    os.symlink("a/b", os.path.join(root, "zvb/lnk"))
    os.symlink("usr/lib", os.path.join(root, "lib"))
    shutil.copy(PROG, os.path.join(root, "pathcalls"))
    return root


def ns(argv, op, iters):
    out = subprocess.run(argv + [op, str(iters)], capture_output=True, text=True, timeout=600)
    m = re.search(r"ns_per_op=([\d.]+)", out.stdout)
    if not m:
        raise RuntimeError("%s: %s%s" % (" ".join(argv), out.stdout, out.stderr))
    return float(m.group(1))


def host_calls(argv, op, iters):
    """Host system calls per op: strace -f -c, N and 2N iterations."""
    def total(n):
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as f:
            subprocess.run(["strace", "-f", "-c", "-o", f.name] + argv + [op, str(n)], capture_output=True,
                           timeout=600)
            text = f.read()
        for line in text.splitlines():
            f = line.split()
            if f and f[-1] == "total" and len(f) >= 5:
                return int(f[3])
        return None
    a, b = total(iters), total(2 * iters)
    return None if a is None or b is None else (b - a) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--ops", default=None)
    args = ap.parse_args()
    build()
    ops = args.ops.split(",") if args.ops else subprocess.run([PROG, "--list"], capture_output=True,
                                                              text=True).stdout.split()
    base = tempfile.mkdtemp(prefix="zvisor-fsview-bench-")
    root = make_root(base)
    native = ["chroot", root, "/pathcalls"] if os.geteuid() == 0 else None
    viewed = [ZVISOR, "run", "--root", root, "--", "/pathcalls"]
    # zvisor alone: the same tree through a chroot of zvisor itself is not
    # possible, so by a bind of the root over / (the paths stay the guest's)
    alone = ["chroot", root, "/zvisor", "run", "--", "/pathcalls"] if native else None
    if alone:
        shutil.copy(ZVISOR, os.path.join(root, "zvisor"))
    print("| op | native ns | --root ns | ratio | min native / min --root | zvisor alone | host calls per op |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    for op in ops:
        pairs = []
        for _ in range(args.reps):
            n = ns(native, op, args.iters) if native else None
            z = ns(viewed, op, args.iters)
            a = ns(alone, op, args.iters) if alone else None
            pairs.append((n, z, a))
        zs = [z for _, z, _ in pairs]
        if native:
            ratios = [z / n for n, z, _ in pairs]
            alone_r = [a / n for n, _, a in pairs]
            nat = [n for n, _, _ in pairs]
            row = "| %s | %.0f | %.0f | %.2fx | %.0f / %.0f | %.2fx |" % (
                op, statistics.median(nat), statistics.median(zs), statistics.median(ratios), min(nat), min(zs),
                statistics.median(alone_r))
        else:
            row = "| %s | - | %.0f | - | - | - |" % (op, statistics.median(zs))
        calls = host_calls(viewed, op, 2000) if shutil.which("strace") else None
        print(row + (" %.2f |" % calls if calls is not None else " - |"), flush=True)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
