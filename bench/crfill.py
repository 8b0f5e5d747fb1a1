#!/usr/bin/env python3
"""What filling restored memory in the background would buy, outside zvisor.

build/bench/crfill maps a file of random pages MAP_PRIVATE, as `zvisor
restore` maps a heap from pages.bin, then reads and writes one word of every
page, as build/bench/crheap does after a restore; a second thread fills the
memory meanwhile in one of several ways (see crfill.c). Each round runs every
mode once, in a shuffled order; a mode's ratio is, per round, the plain lazy
run's time over its own. Not a test: nothing fails on slow figures."""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

PROG = os.path.join(common.ROOT, "build", "bench", "crfill")
MODES = ["lazy", "populate", "idle", "readahead", "thp", "thpsync"]


def make_file(path, mib):
    if os.path.exists(path) and os.path.getsize(path) == mib << 20:
        return
    with open(path + ".tmp", "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
        os.fsync(f.fileno())  # clean pages: POSIX_FADV_DONTNEED drops only those
    os.rename(path + ".tmp", path)


def one(path, mode, cold):
    argv = [PROG, path, mode] + (["cold"] if cold else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def ms(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="100,1024:cold",
                    help="MIB[:cold], comma-separated (cold: the file leaves the page cache first)")
    ap.add_argument("--reps", type=int, default=7, help="rounds per case")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--out", default=os.path.join(common.RESULTS, "restore-fill.md"))
    args = ap.parse_args()
    if not os.path.exists(PROG):
        sys.exit(f"crfill.py: {PROG} is missing: run `make -C bench build`")
    modes = args.modes.split(",")
    info = common.machine_info()
    info["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    info["commit"] = subprocess.run(["git", "-C", common.ROOT, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
    load0 = common.loadavg()
    rows, ratio_rows = [], []
    for case in args.cases.split(","):
        mib, _, how = case.partition(":")
        cold = how == "cold"
        path = os.path.join(args.workdir, f"crfill-{mib}.bin")
        make_file(path, int(mib))
        runs = {m: [] for m in modes}
        for rep in range(args.reps):
            order = modes[:]
            random.shuffle(order)
            for m in order:
                runs[m].append(one(path, m, cold))
            common.log(f"{case} round {rep + 1}: " + ", ".join(
                f"{m} {runs[m][-1]['touched']:.0f}" for m in modes))
        name = f"{mib} MiB" + (", cold" if cold else "")
        for m in modes:
            r = runs[m]
            def cell(k):
                v = [x[k] for x in r]
                return f"{ms(statistics.median(v))} ({ms(min(v))})"
            rows.append([name, m, cell("start"), cell("read"), cell("touched"), cell("all"),
                         f"{statistics.median(x['faults'] for x in r):,.0f}",
                         f"{statistics.median(x['anon_huge_kb'] for x in r) / 1024:,.0f}"])
            if m != "lazy" and "lazy" in runs:
                q = [a["touched"] / b["touched"] for a, b in zip(runs["lazy"], r)]
                ratio_rows.append([name, m, f"{statistics.median(q):.2f}x", f"{min(q):.2f}-{max(q):.2f}"])
        os.unlink(path)
    load1 = common.loadavg()
    out = ["# Filling restored memory in the background: what it would buy", "",
           f"`python3 bench/crfill.py --cases {args.cases} --reps {args.reps}` "
           "(build/bench/crfill, bench/crfill.c; no zvisor and no CRIU: the memory steps alone).", "",
           "Each cell: median (minimum) over the rounds, in ms from mapping the file. *start*: the "
           "mapping (and, for thpsync, the whole fill); *read*: then one word of every page read; "
           "*touched*: then written; *all*: the filler done too. *faults*: the process's page faults, "
           "its filler thread's included (MADV_POPULATE_WRITE counts one per page). *huge MiB*: "
           "AnonHugePages at the end.", "",
           common.markdown_table(["case", "mode", "start", "read", "touched", "all", "faults", "huge MiB"], rows),
           "", "Per-round ratios of *touched*, lazy time / the mode's time (above 1: the mode is faster):", "",
           common.markdown_table(["case", "mode", "median", "range"], ratio_rows), "",
           "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in info.items()]
    out += [f"- loadavg before: {load0}", f"- loadavg after: {load1}", ""]
    text = "\n".join(out)
    print(text)
    if args.out != "-":
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
