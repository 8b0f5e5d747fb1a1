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
      [--idle-thread] [--counts] [--analysis] [--user USER --home DIR]

--idle-thread runs the syscall ops with a second thread blocked in a read
(microbench -T), as in most real programs. --counts adds, per op, the host
system calls (strace -f -c) and page faults (perf stat) per operation of
each side, counted over N and 2N operations (the difference, over N), so
that start-up is left out: the stable measure on these machines.
--analysis adds what analysing code without a cache entry costs:
`zvisor run --no-cache /bin/true` against a warm run (libc, ld.so and
/bin/true decoded), and per exec of a shell loop under --no-cache, where
each child takes what the shell knew. --user runs both sides as USER
(setpriv), with HOME=DIR and no XDG_CACHE_HOME when --home is given (a
user without a home keeps zvisor's cache in /tmp/zvisor-UID).

Example, this tree's binary against an older one:
  python3 bench/paired.py --runner new='build/zvisor run --' \\
      --runner old='/tmp/zvisor-old run --'
"""
import argparse
import os
import pwd
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MICRO = os.path.join(HERE, "..", "build", "bench", "microbench")
ZVISOR = os.path.join(HERE, "..", "build", "zvisor")
PROCESS_OPS = ("fork", "exec", "sh")


class Side:
    """How commands are run: as this user, or as another through setpriv
    (with its HOME, and no XDG_CACHE_HOME when a home is named), from
    copies of the binaries it can reach."""

    def __init__(self, user=None, home=None):
        self.user, self.home, self.copies = user, home, {}
        if not user:
            return
        pw = pwd.getpwnam(user)
        self.prefix = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups"]
        self.dir = tempfile.mkdtemp(prefix="zvbench-paired-")
        os.chmod(self.dir, 0o755)
        self.env = dict(os.environ, HOME=home or pw.pw_dir)
        if home:
            self.env.pop("XDG_CACHE_HOME", None)

    def reach(self, path):
        """A path of path that the side's user can run."""
        if not self.user or path not in (MICRO, ZVISOR):
            return path
        if path not in self.copies:
            self.copies[path] = os.path.join(self.dir, os.path.basename(path))
            shutil.copy2(path, self.copies[path])
        return self.copies[path]

    def argv(self, argv):
        argv = [self.reach(a) for a in argv]
        return self.prefix + argv if self.user else argv

    def run(self, argv, **kw):
        return subprocess.run(self.argv(argv), capture_output=True, text=True, timeout=600,
                              env=self.env if self.user else None, cwd="/", **kw)

    def close(self):
        if self.user:
            shutil.rmtree(self.dir, ignore_errors=True)


def micro_args(op, iters, batches, idle):
    return [MICRO, "-b", str(batches)] + (["-T"] if idle and op not in PROCESS_OPS else []) + [op, str(iters)]


def measure(side, prefix, op, iters, batches, idle):
    """ns per op: microbench's median batch, one process."""
    out = side.run(prefix + micro_args(op, iters, batches, idle))
    m = re.search(r"ns_per_op=([\d.]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("%s %s failed: %s%s" % (" ".join(prefix), op, out.stdout, out.stderr))
    return float(m.group(1))


def strace_calls(side, argv):
    """Host system calls of argv and its children (strace -f -c)."""
    with tempfile.NamedTemporaryFile("r", prefix="zvbench-strace-", dir=side.dir if side.user else None) as f:
        if side.user:
            os.chmod(f.name, 0o666)
        r = side.run(["strace", "-f", "-c", "-q", "-o", f.name] + argv)
        text = f.read()
    m = re.search(r"^-+.*\n\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d+)?\s*total$", text, re.M)
    if r.returncode != 0 or not m:
        raise RuntimeError("strace of %s failed: %s%s" % (" ".join(argv), r.stderr, text[-500:]))
    return int(m.group(1))


def page_faults(side, argv):
    r = side.run(["perf", "stat", "-x", ",", "-e", "page-faults"] + argv)
    m = re.search(r"^(\d+),[^,]*,page-faults", r.stderr, re.M)
    if r.returncode != 0 or not m:
        raise RuntimeError("perf stat of %s failed: %s" % (" ".join(argv), r.stderr[-500:]))
    return int(m.group(1))


def per_op(side, prefix, op, idle, count):
    """count's figure per op: (f(2N) - f(N)) / N, start-up left out."""
    n = {"fork": 100, "exec": 50, "sh": 20}.get(op, 20000)
    a = count(side, prefix + micro_args(op, n, 1, idle))
    b = count(side, prefix + micro_args(op, 2 * n, 1, idle))
    return (b - a) / n


def cpu_ms(side, argv, reps):
    """The median CPU time (user + system, all processes) of argv, in ms."""
    times = []
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = side.run(argv)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(argv), r.stderr[-500:]))
        times.append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
    return statistics.median(times), min(times)


def analysis(side, reps):
    """What decoding costs without a cache entry, in CPU ms."""
    z = side.reach(ZVISOR)
    side.run([z, "run", "--", "/bin/true"])  # the cache warm
    loop = ["/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done"]
    rows = []
    nat = cpu_ms(side, ["/bin/true"], reps)
    warm = cpu_ms(side, [z, "run", "--", "/bin/true"], reps)
    cold = cpu_ms(side, [z, "run", "--no-cache", "--", "/bin/true"], reps)
    rows.append(("/bin/true, its first image (libc, ld.so, true decoded)", nat, warm, cold))
    nat = cpu_ms(side, loop, reps)
    warm = cpu_ms(side, [z, "run", "--"] + loop, reps)
    cold = cpu_ms(side, [z, "run", "--no-cache", "--"] + loop, reps)
    rows.append(("per exec of a 10-exec shell loop (each child takes what the shell knew)",
                 tuple(x / 10 for x in nat), tuple(x / 10 for x in warm), tuple(x / 10 for x in cold)))
    print()
    print("| analysis (CPU, median of %d, min) | native | zvisor, warm cache | zvisor --no-cache | uncached - warm |"
          % reps)
    print("|---|---|---|---|---|")
    for what, nat, warm, cold in rows:
        print("| %s | %.2f ms (%.2f) | %.2f ms (%.2f) | %.2f ms (%.2f) | %.2f ms |" % (
            what, nat[0], nat[1], warm[0], warm[1], cold[0], cold[1], cold[0] - warm[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9, help="pairs per op and runner (default 9)")
    ap.add_argument("--ops", default="fork,exec,sh,getppid")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--runner", action="append", default=[], metavar="NAME=COMMAND")
    ap.add_argument("--idle-thread", action="store_true", help="syscall ops with a second, idle thread")
    ap.add_argument("--counts", action="store_true", help="host calls and page faults per op")
    ap.add_argument("--analysis", action="store_true", help="the cost of analysing uncached code")
    ap.add_argument("--user", help="run both sides as this user (root only)")
    ap.add_argument("--home", help="with --user: its HOME, and no XDG_CACHE_HOME")
    args = ap.parse_args()
    if not os.path.exists(MICRO):
        sys.exit("paired.py: %s is missing: run `make -C bench build`" % MICRO)
    if args.user and os.geteuid() != 0:
        sys.exit("paired.py: --user needs root")
    side = Side(args.user, args.home)
    runners = []
    for spec in args.runner or ["zvisor=%s run --" % ZVISOR]:
        name, _, cmd = spec.partition("=")
        if not cmd:
            sys.exit("paired.py: --runner takes NAME=COMMAND, not %r" % spec)
        runners.append((name, shlex.split(cmd)))
    try:
        run_pairs(args, side, runners)
        if args.analysis:
            analysis(side, max(args.reps, 5))
    finally:
        side.close()


def run_pairs(args, side, runners):
    iters = {"fork": 200, "exec": 100, "sh": 50}
    counts = " host calls/op | page faults/op |" if args.counts else ""
    print("| op | runner | native min (µs) | runner min (µs) | median ratio | ratio range | |%s" % counts)
    print("|---|---|---|---|---|---|---|%s" % ("---|---|" if args.counts else ""))
    for op in args.ops.split(","):
        n = iters.get(op, 200000)
        pairs = {name: [] for name, _ in runners}
        for rep in range(args.reps):
            for name, prefix in runners:
                nat = measure(side, [], op, n, args.batches, args.idle_thread)
                zv = measure(side, prefix, op, n, args.batches, args.idle_thread)
                pairs[name].append((nat, zv))
            print("  %s: pair %d/%d done" % (op, rep + 1, args.reps), file=sys.stderr)
        extra, native_counts = "", ""
        if args.counts:
            native_counts = " %.1f | %.1f |" % (per_op(side, [], op, args.idle_thread, strace_calls),
                                                 per_op(side, [], op, args.idle_thread, page_faults))
        for name, prefix in runners:
            p = pairs[name]
            ratios = [z / nt for nt, z in p]
            med = statistics.median(ratios)
            lo, hi = min(ratios), max(ratios)
            noisy = "~" if hi - lo > abs(med - 1.0) else ""
            if args.counts:
                extra = " %.1f (native %s) | %.1f (native %s) |" % (
                    per_op(side, prefix, op, args.idle_thread, strace_calls), native_counts.split("|")[0].strip(),
                    per_op(side, prefix, op, args.idle_thread, page_faults), native_counts.split("|")[1].strip())
            print("| %s | %s | %.3g | %.3g | %.2fx | %.2f-%.2f | %s |%s" % (
                op, name, min(nt for nt, _ in p) / 1000, min(z for _, z in p) / 1000, med, lo, hi, noisy, extra))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
