#!/usr/bin/env python3
"""Paired runs of the microbenchmark: for each op, every repetition runs
native and then each runner back to back, so that both halves of a pair
meet the same state of this shared, bimodal VM. Reported per runner: the
median of the per-pair ratios to native, the minimum of each side (the
quietest moment each reached), and the ratios' spread. A row whose spread
(highest minus lowest ratio) exceeds its distance from 1.0 is marked '~':
noise as large as the effect.

  python3 bench/paired.py [--reps 9] [--ops fork,exec,sh,spawn,getppid]
      [--runner NAME=COMMAND ...]   (default: zvisor=build/zvisor run --)
      [--user NAME=USER ...] [--counts] [--idle-thread] [--analysis]

--user nobody=nobody adds a runner NAME that runs zvisor as USER with
HOME=/nonexistent and no XDG_CACHE_HOME (a user without a home directory),
paired with native runs as the same user. --counts adds a second table:
host calls (strace -f -c) and page faults (perf stat) per operation of
native and each runner, each the difference between two runs of the
microbench with different operation counts, so start-up cancels out.
--idle-thread runs the syscall ops with a second thread blocked in a read
(microbench -T), as in most real programs. --analysis adds what analysing
code without a cache entry costs, in CPU time, for zvisor and each --user:
`zvisor run --no-cache /bin/true` against a warm run (libc, ld.so and
/bin/true decoded), and per exec of a shell loop under --no-cache, where
each child takes what the shell knew.

Example, this tree's binary against an older one:
  python3 bench/paired.py --runner new='build/zvisor run --' \\
      --runner old='/tmp/zvisor-old run --'
"""
import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MICRO = os.path.join(HERE, "..", "build", "bench", "microbench")
ZVISOR = os.path.join(HERE, "..", "build", "zvisor")


PROCESS_OPS = ("fork", "exec", "sh", "spawn")
IDLE = False  # --idle-thread


def micro(op, n, batches=1):
    """The microbench's argv for n ops of op."""
    return [MICRO, "-b", str(batches)] + (["-T"] if IDLE and op not in PROCESS_OPS else []) + [op, str(n)]


def measure(prefix, op, iters, batches):
    """ns per op: microbench's median batch, one process."""
    out = subprocess.run(prefix + micro(op, iters, batches), capture_output=True, text=True, timeout=600)
    m = re.search(r"ns_per_op=([\d.]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("%s %s failed: %s%s" % (" ".join(prefix), op, out.stdout, out.stderr))
    return float(m.group(1))


def as_user(user, cmd):
    """cmd run as user with its own ids, no supplementary groups, and no
    home directory or cache directory in its environment."""
    import pwd
    pw = pwd.getpwnam(user)
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups",
            "env", "-u", "XDG_CACHE_HOME", "HOME=/nonexistent"] + cmd


# Operation counts for --counts: (few, many); the difference cancels start-up.
COUNT_OPS = {"fork": (1000, 3000), "exec": (100, 300), "sh": (100, 300), "spawn": (100, 300),
             "getppid": (100000, 300000),
             "ptracestop": (10000, 30000)}
CALL_OPS = {"fork": (200, 600), "exec": (20, 60), "sh": (20, 60), "spawn": (20, 60),
            "getppid": (10000, 30000),
            "ptracestop": (1000, 3000)}


# Ops strace cannot count natively: the host allows one tracer, so under
# strace -f the microbench's own PTRACE_TRACEME fails and its wait hangs.
NO_NATIVE_STRACE = ("ptracestop",)


def host_calls(prefix, op, n):
    import tempfile
    if op in NO_NATIVE_STRACE and not prefix:
        return float("nan")
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as f:
        subprocess.run(["strace", "-f", "-c", "-o", f.name] + prefix + micro(op, n),
                       capture_output=True, timeout=600, check=True)
        m = re.search(r"^\s*100\.00\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total$", f.read(), re.M)
        return int(m.group(1)) if m else float("nan")


def page_faults(prefix, op, n):
    out = subprocess.run(["perf", "stat", "-x,", "-e", "page-faults"] + prefix + micro(op, n),
                         capture_output=True, text=True, timeout=600, check=True)
    for line in out.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2].startswith("page-faults") and f[0].isdigit():
            return int(f[0])
    return float("nan")


def per_op(fn, prefix, op, counts):
    few, many = counts
    return (fn(prefix, op, many) - fn(prefix, op, few)) / (many - few)


def count_table(ops, runners):
    print()
    print("| op | runner | host calls per op | page faults per op | native calls | native faults |")
    print("|---|---|---|---|---|---|")
    for op in ops:
        for name, prefix, native in runners:
            nc = per_op(host_calls, native, op, CALL_OPS.get(op, CALL_OPS["getppid"]))
            nf = per_op(page_faults, native, op, COUNT_OPS.get(op, COUNT_OPS["getppid"]))
            zc = per_op(host_calls, prefix, op, CALL_OPS.get(op, CALL_OPS["getppid"]))
            zf = per_op(page_faults, prefix, op, COUNT_OPS.get(op, COUNT_OPS["getppid"]))
            print("| %s | %s | %.1f | %.1f | %.1f | %.1f |" % (op, name, zc, zf, nc, nf))
        sys.stdout.flush()


def cpu_ms(argv, reps):
    """The median and least CPU time (user + system, every process) of argv, in ms."""
    times = []
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, capture_output=True, timeout=600, check=True, cwd="/")
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
    return statistics.median(times), min(times)


def analysis_table(users, reps):
    """What decoding costs without a cache entry, in CPU ms: zvisor as this
    user and as each --user, against a warm cache and native."""
    loop = ["/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done"]
    print()
    print("| analysis (CPU ms, median of %d, min) | user | native | zvisor, warm cache | zvisor --no-cache |"
          " uncached - warm |" % reps)
    print("|---|---|---|---|---|---|")
    for name, wrap in [("zvisor", lambda c: c)] + [(n, lambda c, u=u: as_user(u, c)) for n, u in users]:
        subprocess.run(wrap([ZVISOR, "run", "--", "/bin/true"]), capture_output=True, cwd="/")  # warm
        for what, argv, per in (("/bin/true, its first image (libc, ld.so, true decoded)", ["/bin/true"], 1),
                                ("per exec of a 10-exec shell loop", loop, 10)):
            nat, warm, cold = (tuple(x / per for x in cpu_ms(wrap(pre + argv), reps))
                               for pre in ([], [ZVISOR, "run", "--"], [ZVISOR, "run", "--no-cache", "--"]))
            print("| %s | %s | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) | %.2f |" % (
                what, name, nat[0], nat[1], warm[0], warm[1], cold[0], cold[1], cold[0] - warm[0]))
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9, help="pairs per op and runner (default 9)")
    ap.add_argument("--ops", default="fork,exec,sh,getppid")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--runner", action="append", default=[], metavar="NAME=COMMAND")
    ap.add_argument("--user", action="append", default=[], metavar="NAME=USER",
                    help="a runner NAME: zvisor as USER without a home directory, beside native as USER")
    ap.add_argument("--counts", action="store_true", help="host calls and page faults per operation too")
    ap.add_argument("--idle-thread", action="store_true", help="syscall ops with a second, idle thread")
    ap.add_argument("--analysis", action="store_true", help="the cost of analysing uncached code")
    args = ap.parse_args()
    global IDLE
    IDLE = args.idle_thread
    if not os.path.exists(MICRO):
        sys.exit("paired.py: %s is missing: run `make -C bench build`" % MICRO)
    runners, users = [], []  # (name, prefix, the native run's prefix); (name, user)
    for spec in args.runner or ([] if args.user else ["zvisor=%s run --" % ZVISOR]):
        name, _, cmd = spec.partition("=")
        if not cmd:
            sys.exit("paired.py: --runner takes NAME=COMMAND, not %r" % spec)
        runners.append((name, shlex.split(cmd), []))
    for spec in args.user:
        name, _, user = spec.partition("=")
        if not user:
            sys.exit("paired.py: --user takes NAME=USER, not %r" % spec)
        users.append((name, user))
        runners.append((name, as_user(user, [ZVISOR, "run", "--"]), as_user(user, [])))
    iters = {"fork": 200, "exec": 100, "sh": 50, "spawn": 100, "ptracestop": 20000}
    print("| op | runner | native min (µs) | runner min (µs) | median ratio | ratio range | |")
    print("|---|---|---|---|---|---|---|")
    for op in args.ops.split(","):
        n = iters.get(op, 200000)
        pairs = {name: [] for name, _, _ in runners}
        for rep in range(args.reps):
            for name, prefix, native in runners:
                nat = measure(native, op, n, args.batches)
                zv = measure(prefix, op, n, args.batches)
                pairs[name].append((nat, zv))
            print("  %s: pair %d/%d done" % (op, rep + 1, args.reps), file=sys.stderr)
        for name, _, _ in runners:
            p = pairs[name]
            ratios = [z / nt for nt, z in p]
            med = statistics.median(ratios)
            lo, hi = min(ratios), max(ratios)
            noisy = "~" if hi - lo > abs(med - 1.0) else ""
            print("| %s | %s | %.3g | %.3g | %.2fx | %.2f-%.2f | %s |" % (
                op, name, min(nt for nt, _ in p) / 1000, min(z for _, z in p) / 1000, med, lo, hi, noisy))
        sys.stdout.flush()
    if args.counts:
        count_table(args.ops.split(","), runners)
    if args.analysis:
        analysis_table(users, max(args.reps, 5))


if __name__ == "__main__":
    main()
