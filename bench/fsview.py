#!/usr/bin/env python3
"""The cost of `zvisor run --root` per path call: bench/pathcalls.c's loops
run in a chroot (the native figure; root only), under zvisor with --root,
and under zvisor without --root on the same tree by its host paths (the
cost of zvisor alone), in pairs; and the host calls zvisor makes per guest
call (strace -f of zvisor's process, N and 2N iterations: the
difference over N).

  python3 bench/fsview.py [--reps 7] [--iters 20000] [--ops stat_abs,...]
  python3 bench/fsview.py --workloads ROOTFS [--reps 7]   (root only)

Prints a markdown table: per op, native ns (CPU time of the process; --wall
for wall time), zvisor --root ns and its ratio
(median of per-pair ratios, with the minimum of each side), zvisor alone,
and host calls per op (native's beside).
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

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
    """CPU ns per op (the process's CPU time: waits for a CPU on a loaded
    machine are not in it), with --wall the wall time."""
    out = subprocess.run(argv + [op, str(iters)], capture_output=True, text=True, timeout=600)
    m = re.search(r"\bns_per_op=([\d.]+) cpu_ns_per_op=([\d.]+)", out.stdout)
    if not m:
        raise RuntimeError("%s: %s%s" % (" ".join(argv), out.stdout, out.stderr))
    return float(m.group(1 if WALL else 2))


WALL = False


def host_calls(argv, op, iters):
    """Host system calls per op: strace -f, N and 2N iterations, the calls
    counted from the full log (strace -c leaves out calls it cannot name,
    such as getxattrat on an older strace)."""
    def total(n):
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as f:
            subprocess.run(["strace", "-f", "-o", f.name] + argv + [op, str(n)], capture_output=True,
                           timeout=600)
            return sum(1 for line in f if "resumed>" not in line and " +++ " not in line
                       and " --- " not in line and "+++ exited" not in line)
    a, b = total(iters), total(2 * iters)
    return (b - a) / iters


# File-heavy shell work in a full rootfs (e.g. a Debian minbase): a chroot
# with /proc, /dev and /sys bound (native), zvisor run in that chroot
# (zvisor alone), and zvisor run --root from outside; each started the same
# way (a mount namespace and the three binds) so their times compare.
WORKLOADS = {
    "find": "find /usr > /dev/null",
    "ls -lR": "ls -lR /usr > /dev/null",
    "tar": "tar cf - /usr/share > /dev/null",
    "cat each": "for f in /usr/share/doc/*/copyright; do cat \"$f\"; done > /dev/null",
    "exec x200": "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done",
}


def run_measured(argv):
    """Wall seconds and CPU seconds (user + system of the whole tree) of a run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def workloads(rootfs, reps):
    shutil.copy(ZVISOR, os.path.join(rootfs, "zvisor"))
    binds = "for d in proc dev sys; do mount --rbind /$d %s/$d; done; " % rootfs
    ns_ = ["unshare", "-m", "--propagation", "private", "sh", "-c"]
    cmds = {"chroot": ns_ + [binds + 'exec chroot %s /bin/sh -c "$0"' % rootfs],
            "alone": ns_ + [binds + 'exec chroot %s /zvisor run -- /bin/sh -c "$0"' % rootfs],
            "root": ns_ + [binds + 'exec %s run --root %s -- /bin/sh -c "$0"' % (ZVISOR, rootfs)]}
    print("Wall time, then CPU time (user + system of the whole process tree; steadier on a loaded machine).\n")
    print("| workload | chroot s | --root s | ratio | min chroot / min --root | alone | CPU ratio | CPU alone |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for name, line in WORKLOADS.items():
        t = {k: [] for k in cmds}
        for _ in range(reps):
            for k, c in cmds.items():
                t[k].append(run_measured(c + [line]))
        def med(k, j, by=None):
            return statistics.median([a[j] / b[j] for a, b in zip(t[k], t[by])] if by else [a[j] for a in t[k]])
        print("| %s | %.3f | %.3f | %.2fx | %.3f / %.3f | %.2fx | %.2fx | %.2fx |" % (
            name, med("chroot", 0), med("root", 0), med("root", 0, "chroot"), min(a[0] for a in t["chroot"]),
            min(a[0] for a in t["root"]), med("alone", 0, "chroot"), med("root", 1, "chroot"),
            med("alone", 1, "chroot")), flush=True)
    os.unlink(os.path.join(rootfs, "zvisor"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--ops", default=None)
    ap.add_argument("--workloads", metavar="ROOTFS")
    ap.add_argument("--wall", action="store_true", help="wall time per op instead of CPU time")
    args = ap.parse_args()
    global WALL
    WALL = args.wall
    if args.workloads:
        return workloads(args.workloads, args.reps)
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
    print("| op | native ns | --root ns | ratio | min native / min --root | zvisor alone | host calls per op (native) |")
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
        if shutil.which("strace"):
            calls = "%.2f" % host_calls(viewed, op, 2000)
            if native:
                calls += " (%.2f)" % host_calls(native, op, 2000)
        else:
            calls = "-"
        print(row + " %s |" % calls, flush=True)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
