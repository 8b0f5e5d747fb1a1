#!/usr/bin/env python3
"""What --fake-root costs a stat: host calls per operation (strace -f of
the whole run, counted) and time, paired: each repetition runs native, `zvisor run`
and `zvisor run --fake-root` back to back; reported per runner are the
median of the per-pair ratios to native and each side's minimum.

Operations: the microbenchmark's stat, fstat and lstat of a symlink (one
file again and again), and two file-heavy commands over a tree of distinct
files (each stat'ed once): `ls -lnR` and `find -printf` of owners.

  python3 bench/fakeid.py [--reps 7] [--tree /usr/share/doc] [--out bench/results/fakeid.md]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import common

MICRO = os.path.join(common.ROOT, "build", "bench", "microbench")


def runners(db):
    return [("native", []), ("zvisor", [common.ZVISOR, "run", "--"]),
            ("fake-root", [common.ZVISOR, "run", "--fake-root", "--fake-db", db, "--"])]


def ops(tree):
    return [
        ("stat", [MICRO, "-b", "3", "stat", "20000"], 20000),
        ("fstat", [MICRO, "-b", "3", "fstat", "20000"], 20000),
        ("lstat symlink", [MICRO, "-b", "3", "lstatlink", "20000"], 20000),
        ("ls -lnR", ["ls", "-lnR", tree], None),
        ("find -printf %U", ["find", tree, "-printf", "%U %G %m\n"], None),
    ]


def timed(argv):
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    dt = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(argv), p.stderr[-500:]))
    m = re.search(r"ns_per_op=([\d.]+)", p.stdout)
    return float(m.group(1)) if m else dt * 1e9


def host_calls(argv):
    """{syscall: calls} of the whole run, from strace -f (its -c leaves out
    the calls it has no name for, getxattrat among them)."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as f:
        subprocess.run(["strace", "-f", "-o", f.name] + argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        counts = {}
        for line in f:
            m = re.match(r"\d+ +(\w+)\(", line)
            if m:
                name = {"syscall_0x1d0": "getxattrat"}.get(m.group(1), m.group(1))
                counts[name] = counts.get(name, 0) + 1
        return counts


STAT_CALLS = ("newfstatat", "statx", "fstat", "lstat", "stat", "getxattr", "lgetxattr", "fgetxattr",
              "getxattrat", "readlinkat", "fstatfs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--tree", default="/usr/share/doc")
    ap.add_argument("--out", default=os.path.join(common.RESULTS, "fakeid.md"))
    args = ap.parse_args()
    if not os.path.exists(MICRO):
        sys.exit("fakeid.py: %s is missing: run `make -C bench build`" % MICRO)
    nfiles = sum(len(d) + len(f) for _, d, f in os.walk(args.tree))
    db = os.path.join(tempfile.mkdtemp(prefix="zvbench-fakeid-"), "owners.db")
    rows_calls, rows_time = [], []
    for name, argv, per in ops(args.tree):
        n = per or nfiles
        counts = {}
        for rname, prefix in runners(db):
            c = host_calls(prefix + argv)
            counts[rname] = c
        shown = sorted({k for c in counts.values() for k, v in c.items() if k in STAT_CALLS and v >= n / 2})
        for k in shown:
            rows_calls.append([name, k] + ["%.2f" % (counts[r].get(k, 0) / n) for r, _ in runners(db)])
        pairs = {r: [] for r, _ in runners(db)[1:]}
        mins = {r: float("inf") for r, _ in runners(db)}
        for rep in range(args.reps):
            nat = timed(argv)
            mins["native"] = min(mins["native"], nat)
            for rname, prefix in runners(db)[1:]:
                t = timed(prefix + argv)
                mins[rname] = min(mins[rname], t)
                pairs[rname].append(t / nat)
            common.log("  %s: pair %d/%d" % (name, rep + 1, args.reps))
        unit = "ns/op" if per else "ms"
        scale = 1 if per else 1e6
        for rname in pairs:
            r = pairs[rname]
            rows_time.append([name, rname, "%.3g %s" % (mins["native"] / scale, unit),
                              "%.3g %s" % (mins[rname] / scale, unit), "%.2fx" % statistics.median(r),
                              "%.2f-%.2f" % (min(r), max(r))])
    with open(args.out, "w") as f:
        f.write("# --fake-root: the cost of a stat\n\n")
        f.write("`python3 bench/fakeid.py --reps %d --tree %s` (%d entries in the tree), %s.\n\n"
                % (args.reps, args.tree, nfiles, time.strftime("%Y-%m-%d")))
        commit = subprocess.run(["git", "-C", common.ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        info = common.machine_info()
        f.write("Commit %s; " % commit + "; ".join("%s %s" % (k, v) for k, v in info.items() if v) + ".\n\n")
        f.write("## Host calls per operation (strace -f of the whole run, counted)\n\n")
        f.write(common.markdown_table(["operation", "host call", "native", "zvisor", "zvisor --fake-root"],
                                      rows_calls) + "\n\n")
        f.write("## Time, paired (median of per-pair ratios to native; minima)\n\n")
        f.write(common.markdown_table(["operation", "runner", "native min", "runner min", "median ratio",
                                       "ratio range"], rows_time) + "\n")
    print(open(args.out).read())


if __name__ == "__main__":
    main()
