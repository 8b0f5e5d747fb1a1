#!/usr/bin/env python3
"""Paired runs of the microbenchmark: for each op, every repetition runs
native and then each runner back to back, so that both halves of a pair
meet the same state of this shared, bimodal VM. Reported per runner: the
median of the per-pair ratios to native, the minimum of each side (the
quietest moment each reached), and the ratios' spread. A row whose spread
(highest minus lowest ratio) exceeds its distance from 1.0 is marked '~':
noise as large as the effect.

  python3 bench/paired.py [--reps 9] [--ops fork,exec,sh,getppid]
      [--runner NAME=COMMAND ...]   (default: zvisor=build/zvisor run --)

Example, this tree's binary against an older one:
  python3 bench/paired.py --runner new='build/zvisor run --' \\
      --runner old='/tmp/zvisor-old run --'
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MICRO = os.path.join(HERE, "..", "build", "bench", "microbench")
ZVISOR = os.path.join(HERE, "..", "build", "zvisor")


def measure(prefix, op, iters, batches):
    """ns per op: microbench's median batch, one process."""
    out = subprocess.run(prefix + [MICRO, "-b", str(batches), op, str(iters)], capture_output=True,
                         text=True, timeout=600)
    m = re.search(r"ns_per_op=([\d.]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("%s %s failed: %s%s" % (" ".join(prefix), op, out.stdout, out.stderr))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9, help="pairs per op and runner (default 9)")
    ap.add_argument("--ops", default="fork,exec,sh,getppid")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--runner", action="append", default=[], metavar="NAME=COMMAND")
    args = ap.parse_args()
    if not os.path.exists(MICRO):
        sys.exit("paired.py: %s is missing: run `make -C bench build`" % MICRO)
    runners = []
    for spec in args.runner or ["zvisor=%s run --" % ZVISOR]:
        name, _, cmd = spec.partition("=")
        if not cmd:
            sys.exit("paired.py: --runner takes NAME=COMMAND, not %r" % spec)
        runners.append((name, shlex.split(cmd)))
    iters = {"fork": 200, "exec": 100, "sh": 50}
    print("| op | runner | native min (µs) | runner min (µs) | median ratio | ratio range | |")
    print("|---|---|---|---|---|---|---|")
    for op in args.ops.split(","):
        n = iters.get(op, 200000)
        pairs = {name: [] for name, _ in runners}
        for rep in range(args.reps):
            for name, prefix in runners:
                nat = measure([], op, n, args.batches)
                zv = measure(prefix, op, n, args.batches)
                pairs[name].append((nat, zv))
            print("  %s: pair %d/%d done" % (op, rep + 1, args.reps), file=sys.stderr)
        for name, _ in runners:
            p = pairs[name]
            ratios = [z / nt for nt, z in p]
            med = statistics.median(ratios)
            lo, hi = min(ratios), max(ratios)
            noisy = "~" if hi - lo > abs(med - 1.0) else ""
            print("| %s | %s | %.3g | %.3g | %.2fx | %.2f-%.2f | %s |" % (
                op, name, min(nt for nt, _ in p) / 1000, min(z for _, z in p) / 1000, med, lo, hi, noisy))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
