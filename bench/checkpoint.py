#!/usr/bin/env python3
"""Checkpoint and restore against CRIU: checkpoint time, restore
time (to the first instruction, and with every page touched) and image size
of build/bench/crheap holding a heap of 10 MiB, 100 MiB and 1 GiB (every
page touched, pseudo-random, incompressible), and of a tree of 8 such
processes of 10 MiB each, under `zvisor checkpoint`/`zvisor restore` and
`criu dump`/`criu restore -d`, in pairs; and the file bandwidth of the
images' filesystem, the limit both approach. Not a test: nothing fails on
slow figures.

  python3 bench/checkpoint.py [--sizes 10,100,1024] [--trees 8x10] [--reps 5]
      [--big-reps N] [--criu PATH] [--zvisor PATH] [--no-criu] [--out DIR]

CRIU needs root and a build that starts on this kernel: scripts/build-criu.sh
builds one into build/criu/criu (Debian's 3.17.1 stops at `vdso: Failed to
fill self vdso symtable`). A side that cannot run is reported unavailable
with the exact reason; the other side still runs.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import common
from common import fmt_sig, log, markdown_table, why_line

PROG = os.path.join(common.ROOT, "build", "bench", "crheap")
BUILT_CRIU = os.path.join(common.ROOT, "build", "criu", "criu")
MiB = 1 << 20
SIDE_NAMES = {"limit": "file write / read"}
METRICS = ("checkpoint", "restore", "read", "touched")
# Per-pair ratio targets (CRIU time / zvisor time): {metric: (target, the
# cases it applies to, None = every case)}.
TARGETS = {"checkpoint": (2.0, None), "restore": (10.0, ("100 MiB", "1024 MiB")),
           "read": (None, ()), "touched": (1.5, None)}


class Case:
    """procs processes of mib MiB each (procs 1: one process, no child)."""

    def __init__(self, mib, procs=1):
        self.mib, self.procs = mib, procs
        self.label = "%d MiB" % mib if procs == 1 else "%d x %d MiB" % (procs, mib)
        self.total = mib * procs

    def argv(self, go):
        return [PROG, str(self.mib), go] + ([str(self.procs)] if self.procs > 1 else [])


class Unavailable(Exception):
    """A side that cannot run at all here: the reason, one line."""


class Failed(Exception):
    """One run that went wrong: the reason, one line."""


# --- small helpers -------------------------------------------------------------------

def wait_text(path, text, timeout, proc=None, count=1):
    """Poll the file at path (every 0.5 ms) until it holds text count times;
    the time it did. Failed when proc ends first or the time runs out."""
    deadline = time.perf_counter() + timeout
    while True:
        try:
            with open(path) as f:
                if f.read().count(text) >= count:
                    return time.perf_counter()
        except FileNotFoundError:
            pass
        if proc is not None and proc.poll() is not None:
            raise Failed("%r never appeared: the program ended (%s)" % (
                text.strip(), common.status_text(proc.returncode)))
        if time.perf_counter() > deadline:
            raise Failed("%r did not appear within %ss" % (text.strip(), timeout))
        time.sleep(0.0005)


def image_bytes(d):
    """(apparent bytes, allocated bytes) of an image's files, logs left out."""
    size = alloc = 0
    for top, _, files in os.walk(d):
        for n in files:
            if n.endswith(".log"):
                continue
            st = os.lstat(os.path.join(top, n))
            size += st.st_size
            alloc += st.st_blocks * 512
    return size, alloc


def timed(argv, timeout=300, cwd=None):
    """(returncode, stdout, stderr, seconds) of argv."""
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       errors="replace", timeout=timeout, cwd=cwd)
    return r.returncode, r.stdout, r.stderr, time.perf_counter() - t0


def start(argv, out, cwd, mode="w"):
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(out, mode),
                            stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)


def gone(pid, timeout=60):
    """Wait until pid no longer exists (a restored CRIU task is no child of ours)."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            raise Failed("the restored process %d still runs after %ss" % (pid, timeout))
        time.sleep(0.01)


def alive(pid):
    """pid exists and is no zombie (an orphan's zombie waits for init)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pid):
    """The pids of pid's descendants, from /proc/PID/task/TID/children."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/children" % (p, tid)) as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def make_subreaper():
    """Become the reaper of orphans in our tree: this machine's init leaves
    orphaned zombies unreaped, and CRIU cannot restore a pid a zombie holds."""
    import ctypes
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap(pids=(), timeout=60):
    """Reap every ended child (call with no child of ours still tracked by a
    Popen) until none of pids exists any more, zombies included."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        left = [p for p in pids if os.path.exists("/proc/%d" % p)]
        if not left:
            return
        if time.monotonic() > deadline:
            raise Failed("processes %s still exist after %ss" % (left, timeout))
        time.sleep(0.001)


def heap_verdict(out, case):
    text = open(out).read()
    if text.count("heap ok\n") != case.procs or "heap BAD" in text:
        raise Failed("after the restore: %d of %d heaps ok: %s" % (
            text.count("heap ok\n"), case.procs, common.last_line(text) or "no output"))


def faults(out):
    """The page faults per process from the restore until every page was
    touched, as each restored process counted them (getrusage)."""
    n = [int(l.split()[1]) for l in open(out).read().splitlines() if l.startswith("faults ")]
    return sum(n) / len(n) if n else None


def restore_times(out, t0, case, proc=None):
    """(to the first instruction, every page read, every page written): from
    t0 until every process printed "resumed", then "read", then "touched"."""
    return tuple(wait_text(out, line, 300, proc, case.procs) - t0
                 for line in ("resumed\n", "read\n", "touched\n"))


# --- the two sides ---------------------------------------------------------------------

class Zvisor:
    name = "zvisor"

    def __init__(self, path):
        self.path = path

    def probe(self):
        if not os.access(self.path, os.X_OK):
            raise Unavailable("%s does not exist: run `make`" % self.path)
        help_text = subprocess.run([self.path, "--help"], capture_output=True, text=True).stdout
        if " checkpoint " not in help_text or " restore " not in help_text:
            raise Unavailable("`%s --help` lists no checkpoint/restore command"
                              % common.shown_path(self.path))
        return subprocess.run([self.path, "--version"], capture_output=True,
                              text=True).stdout.strip()

    def once(self, case, d):
        go, out, img = (os.path.join(d, n) for n in ("go", "out", "image"))
        p = start([self.path, "run", "--"] + case.argv(go), out, d)
        try:
            wait_text(out, "ready\n", 300, p, case.procs)
            rc, _, err, ckpt = timed([self.path, "checkpoint", str(p.pid), img])
            if rc != 0:
                raise Failed("zvisor checkpoint: %s" % (why_line(err) or common.status_text(rc)))
            p.wait(60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        os.sync()  # the image's dirty pages written back, outside the timing
        open(go, "w").close()
        t0 = time.perf_counter()
        # The restore's stdout appends to the original's file: the output
        # lands there whether zvisor writes to its own stdio or reopens the
        # original's file by path.
        q = start([self.path, "restore", img], out, d, "a")
        try:
            restore, read, touched = restore_times(out, t0, case, q)
            q.wait(300)
        finally:
            if q.poll() is None:
                q.kill()
                q.wait()
        heap_verdict(out, case)
        if q.returncode != 0:
            raise Failed("zvisor restore: %s" % common.status_text(q.returncode))
        return {"checkpoint": ckpt, "restore": restore, "read": read, "touched": touched,
                "size": image_bytes(img), "faults": faults(out)}


class Criu:
    name = "criu"

    def __init__(self, path):
        self.path = path

    def probe(self):
        if not self.path:
            raise Unavailable("no criu: run scripts/build-criu.sh (Debian's 3.17.1 fails "
                              "`criu check` here: vdso: Failed to fill self vdso symtable)")
        if os.geteuid() != 0:
            raise Unavailable("criu needs root (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)")
        r = subprocess.run([self.path, "check"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            lines = (r.stderr + r.stdout).splitlines()
            err = [l for l in lines if l.startswith("Error")] or lines[-1:]
            raise Unavailable("`%s check` fails: %s" % (self.path, err[0] if err else r.returncode))
        return subprocess.run([self.path, "--version"], capture_output=True,
                              text=True).stdout.replace("\n", " ").strip()

    def once(self, case, d):
        go, out, img = (os.path.join(d, n) for n in ("go", "out", "image"))
        os.mkdir(img)
        p = start(case.argv(go), out, d)
        try:
            wait_text(out, "ready\n", 300, p, case.procs)
            tree = [p.pid] + descendants(p.pid)
            rc, _, _, ckpt = timed([self.path, "dump", "-t", str(p.pid), "-D", img,
                                    "-o", "dump.log"])
            if rc != 0:
                raise Failed("criu dump: exit %d: %s" % (rc, last_error(img, "dump.log")))
            p.wait(60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        reap(tree)  # CRIU restores these pids: none may still be held
        os.sync()
        open(go, "w").close()
        t0 = time.perf_counter()
        rc, _, _, returned = timed([self.path, "restore", "-d", "-D", img, "-o", "restore.log"])
        if rc != 0:
            raise Failed("criu restore: exit %d: %s" % (rc, last_error(img, "restore.log")))
        restore, read, touched = restore_times(out, t0, case)
        gone(p.pid)  # criu restores the same pid; the root waits for its children
        reap(tree)  # the restored root is an orphan: ours to reap
        heap_verdict(out, case)
        return {"checkpoint": ckpt, "restore": restore, "read": read, "touched": touched,
                "size": image_bytes(img), "faults": faults(out), "restore_cmd": returned}


def last_error(img, log_name):
    try:
        lines = open(os.path.join(img, log_name)).read().splitlines()
    except OSError as e:
        return str(e)
    errs = [l for l in lines if l.startswith("Error") and "RLIMIT_NOFILE" not in l]
    return (errs or lines[-1:] or ["no log"])[0]


def find_criu(arg):
    if arg:
        return arg
    if os.access(BUILT_CRIU, os.X_OK):
        return BUILT_CRIU
    return shutil.which("criu")


# --- the filesystem's bandwidth --------------------------------------------------------------

def write_read(d, mib, chunk, fsync=False, cold=False):
    """Seconds to write mib MiB of chunk's random pages to a new file in d
    (into the page cache, or with fsync) and to read them back (warm: from
    the page cache; cold: after posix_fadvise(DONTNEED) of this file only,
    never a system-wide drop)."""
    path = os.path.join(d, "bandwidth.bin")
    os.sync()
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for _ in range(mib * MiB // len(chunk)):
        os.write(fd, chunk)
    if fsync:
        os.fsync(fd)
    os.close(fd)
    write = time.perf_counter() - t0
    os.sync()
    buf = bytearray(len(chunk))
    fd = os.open(path, os.O_RDONLY)
    if cold:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    t0 = time.perf_counter()
    while os.readv(fd, [buf]) > 0:
        pass
    read = time.perf_counter() - t0
    os.close(fd)
    os.unlink(path)
    return write, read


def file_bandwidth(d, mib, reps=3):
    """MB/s (10^6 bytes) of writing and reading back mib MiB (write_read),
    each way: medians and best of reps."""
    chunk = os.urandom(8 * MiB)
    res = {k: [] for k in ("write", "write+fsync", "read warm", "read cold")}
    for _ in range(reps):
        w, r = write_read(d, mib, chunk)
        res["write"].append(w)
        res["read warm"].append(r)
        w, r = write_read(d, mib, chunk, fsync=True, cold=True)
        res["write+fsync"].append(w)
        res["read cold"].append(r)
    mb = mib * MiB / 1e6
    return {k: {"median": mb / statistics.median(v), "best": mb / min(v),
                "runs": [mb / x for x in v]} for k, v in res.items()}


# --- the report ----------------------------------------------------------------------------------

def summarize(samples):
    """{metric: (median, min)} of a side's runs in one case."""
    out = {}
    for key in METRICS:
        v = [s[key] for s in samples]
        out[key] = (statistics.median(v), min(v))
    out["size"] = samples[-1].get("size")
    f = [s["faults"] for s in samples if s.get("faults") is not None]
    out["faults"] = statistics.median(f) if f else None
    return out


def cell(pair):
    return "%s (%s)" % (fmt_sig(pair[0] * 1e3), fmt_sig(pair[1] * 1e3))


def report(args, info, bw, results, unavailable, failures):
    reps = "%d pairs per case" % args.reps
    if args.big_reps != args.reps:
        reps += " (%d at 1 GiB and over)" % args.big_reps
    lines = ["# Checkpoint and restore: zvisor against CRIU", "",
             "`python3 bench/checkpoint.py %s` (see bench/README.md, *Checkpoint and restore*)."
             % " ".join(sys.argv[1:]), "",
             "Program: build/bench/crheap, a heap of N MiB of pseudo-random non-zero words "
             "(every page touched) per process, waiting in 1 ms naps; the tree case is a "
             "parent and its children, each with a heap of its own. Checkpoint: the "
             "checkpoint command, which ends the program. Restore to the first instruction: "
             "from starting the restore command until every process prints its first line "
             "after it (*restore ms*); every page touched: until every process has then "
             "read one word of every page of its heap and printed a second line (*read ms*), "
             "and written that word of every page back and printed a third (*touched ms*, "
             "the figure the target is for: a write is what a page mapped from the image "
             "pays most for, a copy). %s; each cell is the median (minimum) of the runs, in ms. "
             "*faults / process*: the page faults (minor and major) each restored process "
             "took from its creation until it had touched every page, as getrusage counts "
             "them in that process (zvisor's restore runs in it; CRIU restores a task's "
             "memory from within the task), the median of the runs of a process's mean. "
             "A heap of N MiB has N x 256 pages." % reps, ""]
    sides = [s for s in ("zvisor", "criu") if s not in unavailable]
    rows = []
    for case in args.cases:
        limit = {r["rep"]: r for r in results.get(("limit", case.label), [])}
        for side in ["limit"] + sides:
            samples = results.get((side, case.label))
            if not samples:
                rows.append([case.label, side, "fails", "fails", "fails", "fails", "", "", "", ""])
                continue
            s = summarize(samples)
            pct = {}
            for key, lkey in (("checkpoint", "checkpoint"), ("touched", "restore")):
                shares = [limit[x["rep"]][lkey] / x[key] for x in samples if x["rep"] in limit]
                pct[key] = "%.0f%%" % (100 * statistics.median(shares)) if shares else ""
            real = side != "limit"
            rows.append([case.label, SIDE_NAMES.get(side, side), cell(s["checkpoint"]),
                         cell(s["restore"]), cell(s["read"]) if real else "",
                         cell(s["touched"]) if real else "",
                         "%.1f" % (s["size"][0] / MiB) if real else "",
                         fmt_sig(s["faults"]) if real and s["faults"] is not None else "",
                         pct["checkpoint"] if real else "", pct["touched"] if real else ""])
    lines.append(markdown_table(["case", "side", "checkpoint ms", "restore ms", "read ms",
                                 "touched ms",
                                 "image MiB", "faults / process", "checkpoint: limit share",
                                 "touched: limit share"], rows))
    lines += ["", "The limit (row *file write / read*, measured in each pair beside the two "
              "sides): writing the case's total size of random pages to a new file in the "
              "images' filesystem (into the page cache, as both sides write) stands for the "
              "checkpoint, reading that file back from the page cache (the image was just "
              "written) for the restore with every page touched. A side's limit share is the "
              "median over the pairs of limit time / its time in that pair (100% = at the "
              "limit)."]
    if "zvisor" in sides and "criu" in sides:
        lines += ["", "## Per-pair ratios (CRIU time / zvisor time)", "",
                  "Targets: checkpoint 2x or more in every case; restore to the first "
                  "instruction 10x or more at 100 MiB and 1 GiB; restore with every page "
                  "touched 1.5x or more in every case. *met* compares the median ratio with "
                  "the target; the range shows how far single pairs stray.", ""]
        rrows = []
        for case in args.cases:
            z, c = results.get(("zvisor", case.label)), results.get(("criu", case.label))
            if not z or not c:
                continue
            crep = {x["rep"]: x for x in c}
            for key in METRICS:
                ratios = [crep[zz["rep"]][key] / zz[key] for zz in z if zz["rep"] in crep]
                if not ratios:
                    continue
                target, where = TARGETS[key]
                applies = target is not None and (where is None or case.label in where)
                med = statistics.median(ratios)
                rrows.append([case.label, {"restore": "restore, first instruction",
                                           "read": "restore, every page read",
                                           "touched": "restore, every page touched"}.get(key, key),
                              "%.2fx" % med, "%.2f-%.2f" % (min(ratios), max(ratios)),
                              "%.1fx" % target if applies else "",
                              ("yes" if med >= target else "no") if applies else ""])
        lines.append(markdown_table(["case", "what", "median ratio", "range", "target", "met"],
                                    rrows))
    if bw:
        lines += ["", "## File bandwidth of the images' filesystem (%s, %d MiB file, before and after the runs)"
                  % (args.workdir_fs, args.bw_mib), ""]
        lines.append(markdown_table(["what", "median MB/s", "best MB/s"],
                                    [[k, fmt_sig(v["median"]), fmt_sig(v["best"])]
                                     for k, v in bw.items()]))
    if unavailable:
        lines += ["", "## Unavailable", ""] + ["- %s: %s" % kv for kv in unavailable.items()]
    if failures:
        lines += ["", "## Failed runs", ""] + ["- %s, %s: %s" % f for f in failures]
    lines += ["", "## Machine", ""] + ["- %s: %s" % kv for kv in info.items()]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,1024", help="heap sizes in MiB")
    ap.add_argument("--trees", default="8x10",
                    help="process trees, PROCSxMIB: PROCS processes of MIB MiB each "
                         "(default 8x10; empty: none)")
    ap.add_argument("--reps", type=int, default=5, help="pairs per case (default 5)")
    ap.add_argument("--big-reps", type=int,
                    help="pairs per case of 1 GiB or more in all (default: --reps)")
    ap.add_argument("--criu", help="criu binary (default build/criu/criu, else criu on PATH)")
    ap.add_argument("--no-criu", action="store_true")
    ap.add_argument("--zvisor", default=common.ZVISOR)
    ap.add_argument("--bw-mib", type=int, default=1024, help="bandwidth file size (MiB)")
    ap.add_argument("--workdir", default="/tmp", help="where images go (default /tmp)")
    ap.add_argument("--out", default=common.RESULTS)
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.cases = [Case(m) for m in args.sizes]
    for t in filter(None, args.trees.split(",")):
        try:
            procs, mib = (int(x) for x in t.split("x"))
        except ValueError:
            ap.error("--trees: %r is not PROCSxMIB (e.g. 8x10)" % t)
        args.cases.append(Case(mib, procs))
    if args.big_reps is None:
        args.big_reps = args.reps
    if not os.access(PROG, os.X_OK):
        sys.exit("checkpoint.py: %s is missing: run `make -C bench build`" % PROG)
    work = tempfile.mkdtemp(prefix="zvbench-cr-", dir=args.workdir)
    args.workdir_fs = subprocess.run(["df", "--output=source,fstype", work], capture_output=True,
                                     text=True).stdout.splitlines()[-1].split()
    args.workdir_fs = " ".join(args.workdir_fs)
    try:
        return measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, work):
    sides, unavailable = [], {}
    make_subreaper()
    info = common.machine_info(args.zvisor)
    for side in (Zvisor(args.zvisor), Criu(None if args.no_criu else find_criu(args.criu))):
        if side.name == "criu" and args.no_criu:
            unavailable["criu"] = "--no-criu"
            continue
        try:
            info[side.name] = side.probe()
            sides.append(side)
        except Unavailable as e:
            unavailable[side.name] = str(e)
            log("%s: unavailable: %s" % (side.name, e))
    info["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    info["commit"] = subprocess.run(["git", "-C", common.ROOT, "describe", "--always", "--dirty"],
                                    capture_output=True, text=True).stdout.strip()
    info["loadavg before"] = common.loadavg()
    log("file bandwidth (%d MiB)..." % args.bw_mib)
    bw_before = file_bandwidth(work, args.bw_mib)
    results, failures, broken = {}, [], set()
    chunk = os.urandom(8 * MiB)
    for case in args.cases:
        reps = args.big_reps if case.total >= 1024 else args.reps
        for rep in range(reps):
            w, r = write_read(work, case.total, chunk)
            results.setdefault(("limit", case.label), []).append(
                {"rep": rep, "checkpoint": w, "restore": r, "read": r, "touched": r})
            order = sides if rep % 2 == 0 else sides[::-1]
            for side in order:
                if (side.name, case.label) in broken:
                    continue
                d = tempfile.mkdtemp(dir=work)
                try:
                    r = side.once(case, d)
                    r["rep"] = rep
                    results.setdefault((side.name, case.label), []).append(r)
                    log("%s %s %d/%d: checkpoint %.1f ms, restore %.1f ms, read %.1f ms, "
                        "touched %.1f ms, image %.1f MiB" % (
                            case.label, side.name, rep + 1, reps, r["checkpoint"] * 1e3,
                            r["restore"] * 1e3, r["read"] * 1e3, r["touched"] * 1e3,
                            r["size"][0] / MiB))
                except (Failed, subprocess.TimeoutExpired) as e:
                    failures.append((side.name, case.label, str(e)))
                    broken.add((side.name, case.label))
                    log("%s %s: %s" % (case.label, side.name, e))
                finally:
                    reap()
                    shutil.rmtree(d, ignore_errors=True)
                    os.sync()
    info["loadavg after"] = common.loadavg()
    log("file bandwidth again (%d MiB)..." % args.bw_mib)
    bw_after = file_bandwidth(work, args.bw_mib)
    bw = {"%s, %s" % (k, when): v for when, b in (("before", bw_before), ("after", bw_after))
          for k, v in b.items()}
    text = report(args, info, bw, results, unavailable, failures)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "checkpoint.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "checkpoint.json"), "w") as f:
        json.dump({"args": {k: v if k != "cases" else [c.label for c in v]
                            for k, v in vars(args).items()}, "machine": info,
                   "bandwidth_MBps": bw, "unavailable": unavailable, "failures": failures,
                   "runs": {"%s %s" % k: v for k, v in results.items()}}, f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(common.guarded_main(main))
