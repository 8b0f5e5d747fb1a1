#!/usr/bin/env python3
"""Paired runs of batch workloads (wl_batch.py): each repetition runs the
workload natively and then under each runner, back to back, in fresh
directories, so that both halves of a pair meet the same state of this
shared, bimodal VM. Reported per workload and runner, as bench/paired.py
does for the microbenchmark: the median of the per-pair ratios to native,
each side's minimum and the ratios' range; '~' marks a row whose range
exceeds its distance from 1.0.

  python3 bench/wl_paired.py [--reps 7] [--only make-j2,sh-loop,git-status]
      [--runners zvisor,zvisor-trace] [--user nobody] [--baseline OLD-ZVISOR]

--user runs native and runner alike through `runuser -u USER --`, with the
work directory given to that user and a cache directory of its own
(XDG_CACHE_HOME, warm after the first run as a real user's would be).
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import work_env                                   # noqa: E402
import wl_batch                                               # noqa: E402
from workloads import Runner, make_runners, measure_in_fresh_dir     # noqa: E402

# git refuses a repository another user owns unless told it is safe
# (command-line scope, which git honours for safe.directory).
SAFE_GIT = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}


class AsUser:
    """A runner seen through runuser -u USER --."""

    def __init__(self, runner, user, cache):
        self.inner, self.user, self.cache = runner, user, cache
        self.key, self.kind = runner.key, runner.kind

    def argv(self, cmd, trace_file):
        return ["runuser", "-u", self.user, "--", "env", "XDG_CACHE_HOME=" + self.cache] + \
            self.inner.argv(cmd, trace_file)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def baseline_runner(r, binary):
    """Runner r with another zvisor binary (its argv's first word)."""
    b = Runner("main-" + r.key, r.label, lambda f, p=r.prefix: [binary] + p(f)[1:], r.kind)
    b.available = True
    return b


def give_to(user, path):
    subprocess.run(["chown", "-R", user, path], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="make-j2,sh-loop,git-status")
    ap.add_argument("--runners", default="zvisor,zvisor-trace")
    ap.add_argument("--user", help="run everything as this user (runuser)")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--baseline", metavar="ZVISOR",
                    help="also run each zvisor runner with this binary (rows main-RUNNER), in the same pairs")
    args = ap.parse_args()
    args.quick = False
    os.environ.update(SAFE_GIT)
    wl_batch.GIT_ENV.update(SAFE_GIT)
    runners = make_runners(argparse.Namespace(runners=args.runners, no_install=args.no_install))
    native = next(r for r in runners if r.kind == "native")
    others = [r for r in runners if r.kind != "native" and r.available]
    if args.baseline:
        others += [baseline_runner(r, os.path.abspath(args.baseline)) for r in list(others)
                   if r.kind in ("zvisor", "trace")]
    for r in runners:
        if not r.available:
            print(f"{r.key}: not run: {r.reason}", file=sys.stderr)
    wanted = args.only.split(",")
    ws = [w for w in wl_batch.workloads(args) if w.key in wanted]
    tmp = work_env()["TMPDIR"]
    if args.user:
        cache = os.path.join(tmp, "cache-" + args.user)
        os.makedirs(cache, exist_ok=True)
        native = AsUser(native, args.user, cache)
        others = [AsUser(r, args.user, cache) for r in others]
    print("| workload | runner | user | native min | runner min | median ratio | ratio range | |")
    print("|---|---|---|---|---|---|---|---|")
    for w in ws:
        why = w.prepare(args)
        if why:
            print(f"{w.key}: not run: {why}", file=sys.stderr)
            continue
        if args.user:
            os.chmod(tmp, 0o755)
            give_to(args.user, tmp)
            # each run's directory (made by measure_in_fresh_dir) becomes the user's too
            w.setup_run = (lambda orig: lambda work: (orig(work), give_to(args.user, os.path.dirname(work))))(
                w.setup_run)
        pairs = {r.key: [] for r in others}
        for rep in range(-1, args.reps):         # -1: an untimed warm-up pair
            for r in others:
                runs = []
                for side in (native, r):
                    secs, err, _ = measure_in_fresh_dir(w, side, f"run-{w.key}-{side.key}-{rep}", args)
                    if err:
                        sys.exit(f"wl_paired.py: {w.key} under {side.key}: {err}")
                    runs.append(secs)
                if rep >= 0:
                    pairs[r.key].append(tuple(runs))
            print(f"  {w.key}: pair {rep + 1}/{args.reps} done", file=sys.stderr)
        for r in others:
            p = pairs[r.key]
            ratios = [z / n for n, z in p]
            med, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
            noisy = "~" if hi - lo > abs(med - 1.0) else ""
            print("| %s | %s | %s | %s | %s | %.2fx | %.2f-%.2f | %s |" % (
                w.label, r.key, args.user or "root", wl_batch.fmt_seconds(min(n for n, _ in p)),
                wl_batch.fmt_seconds(min(z for _, z in p)), med, lo, hi, noisy))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
