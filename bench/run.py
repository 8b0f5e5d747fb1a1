#!/usr/bin/env python3
"""Run the zvisor microbenchmark natively and under every runner, interleaved.

For each repetition, for each operation, every available runner runs
build/bench/microbench once (one process per measurement, so that every runner
pays its own start-up outside the timed loop and no measurement inherits
another's state).  The reported figure is the median over the repetitions of
each process's own median batch.  See bench/README.md.

Writes bench/results/micro.json, micro.md and (with matplotlib) micro.png.
Standard library only; matplotlib is optional.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ZVISOR = os.path.join(ROOT, "build", "zvisor")
MICROBENCH = os.path.join(ROOT, "build", "bench", "microbench")
RESULTS = os.path.join(HERE, "results")

# (microbench op, row label).  Labels follow ../shared/REFERENCE.md.
OPS = [
    ("getpid", "getpid"),
    ("getppid", "getppid"),
    ("read", "read 1 byte /dev/zero"),
    ("write", "write 1 byte /dev/null"),
    ("stat", "stat"),
    ("openclose", "open+close"),
    ("clock_gettime", "clock_gettime (vDSO)"),
    ("select10", "select-10"),
    ("select100", "select-100"),
    ("select1000", "select-1000"),
    ("fork", "fork+exit+wait"),
    ("exec", "fork+execve /bin/true"),
    ("sh", "fork+sh -c true"),
]
OP_LABEL = dict(OPS)

# Rows whose cost is one cheap system call: the issue-3 "syscall-bound rows".
# select-100/1000 are left out: the host's own per-fd scan dominates them
# (select-1000 costs ~10 us natively, a tenth of a strace stop), so no
# interposer can be 100x faster than strace there.
SYSCALL_BOUND = ["getpid", "getppid", "read", "write", "stat", "openclose", "select10"]
HOST_BOUND = ["getppid", "read", "write"]

ZVISOR_PLATFORMS = ["zpoline", "sud", "seccomp"]
KVM_PROBE_TIMEOUT = 20.0


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# processes

def run_cmd(argv, timeout, cwd=ROOT, env=None):
    """Run argv in its own session; on timeout kill the whole process group.

    Returns (returncode or None on timeout, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, text=True, errors="replace")
    except OSError as e:
        return -1, "", str(e), 0.0
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return None, out, err, time.monotonic() - t0
    except BaseException:           # ^C: the child is in a session of its own
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        raise


def last_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def why_line(text):
    """The line of a failed command's output that says why: zvisor's own
    message when there is one (a usage text may follow it), else the last."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    for l in lines:
        if l.startswith("zvisor:") or l.startswith("microbench:"):
            return l[:200]
    return lines[-1][:200] if lines else ""


def status_text(rc):
    if rc is not None and rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            pass
    return f"exit status {rc}"


def is_root():
    return os.geteuid() == 0


_apt_updated = False


def ensure_tool(cmd, pkg, allow_install):
    """Return None when cmd is on PATH (installing pkg if allowed), else why not."""
    global _apt_updated
    if shutil.which(cmd):
        return None
    if not allow_install:
        return f"{cmd} not installed (installation disabled)"
    if not is_root():
        return f"{cmd} not installed, and installing {pkg} needs root"
    if not shutil.which("apt-get"):
        return f"{cmd} not installed, and there is no apt-get"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log(f"installing {pkg} (apt-get)")
    if not _apt_updated:
        subprocess.run(["apt-get", "update", "-qq"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _apt_updated = True
    r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", pkg],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env)
    if r.returncode != 0 or not shutil.which(cmd):
        return f"apt-get install {pkg} failed: {last_line(r.stderr) or r.returncode}"
    return None


# ---------------------------------------------------------------------------
# runners

class Runner:
    def __init__(self, key, label, prefix, kind):
        self.key = key
        self.label = label
        self.prefix = prefix
        self.kind = kind          # native, zvisor, strace, gvisor
        self.available = False
        self.reason = ""
        self.note = ""            # e.g. a platform fallback message
        self.env = work_env()
        self.timeouts = set()     # ops that timed out once: not run again

    def argv(self, *args):
        return self.prefix + [MICROBENCH] + list(args)


def probe_microbench(runner, timeout):
    """Run a tiny measurement; return None if it works, else why not."""
    rc, out, err, secs = run_cmd(runner.argv("-b", "1", "-t", "0.01", "getpid"), timeout,
                                 env=runner.env)
    if runner.kind == "gvisor":
        runsc_cleanup()
    if rc is None:
        return f"did not finish within {timeout:.0f} s"
    if rc != 0 or "ns_per_op=" not in out:
        return f"{status_text(rc)}: {why_line(err) or why_line(out) or 'no output'}"
    return None


# Every run gets TMPDIR=a directory private to this run.py, removed at the
# end: microbench's stat/open file goes there (a killed run cannot leave it in
# /tmp), and so does the root directory that `runsc do` makes of its own
# ($TMPDIR/runsc-doNNN, removed when it exits).  gVisor's sandbox process is
# in a session of its own (killing our process group misses it; it dies with
# its parent, being --attached); a killed `runsc do` leaves its directory
# behind, and without --ignore-cgroups cgroups named after the container too.
# Whatever is found there after a gVisor run is ours to clean up.
WORK_TMP = None


def work_env():
    global WORK_TMP
    if WORK_TMP is None:
        import tempfile
        WORK_TMP = tempfile.mkdtemp(prefix="zvbench-", dir="/tmp")
    return dict(os.environ, TMPDIR=WORK_TMP)


def runsc_cleanup(final=False):
    """Kill what is left of our killed `runsc do` runs and remove their state."""
    if WORK_TMP is None or not os.path.isdir(WORK_TMP):
        return
    roots = [os.path.join(WORK_TMP, d) for d in os.listdir(WORK_TMP)
             if d.startswith("runsc-do")]
    for root in roots:
        marker = f"--root={root}".encode()
        for _ in range(20):          # the sandbox and gofer die with their parent
            pids = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if marker in f.read().split(b"\0"):
                            pids.append(int(pid))
                except OSError:
                    pass
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        # The container id is in the lock file's name: ID_sandbox:ID.lock.
        ids = {n.split("_sandbox")[0] for n in os.listdir(root) if "_sandbox" in n}
        for cid in ids:
            for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                try:
                    subs = [os.path.join(base, d) for d in os.listdir(base)]
                except OSError:
                    continue
                for d in [base] + subs:
                    try:
                        os.rmdir(os.path.join(d, cid))
                    except OSError:
                        pass
        shutil.rmtree(root, ignore_errors=True)
    if final:
        shutil.rmtree(WORK_TMP, ignore_errors=True)


def make_runners(args):
    wanted = set(args.runners.split(",")) | {"native"} if args.runners else None

    def want(key):
        return wanted is None or key in wanted

    runners = []
    native = Runner("native", "native", [], "native")
    native.available = True
    runners.append(native)

    for plat in ZVISOR_PLATFORMS:
        if not want(f"zvisor-{plat}"):
            continue
        r = Runner(f"zvisor-{plat}", f"zvisor {plat}",
                   [ZVISOR, "run", f"--platform={plat}", "--"], "zvisor")
        if not os.access(ZVISOR, os.X_OK):
            r.reason = f"{ZVISOR} not built (run make)"
        else:
            # zpoline joins by itself once this works; until then it is
            # listed as unavailable with zvisor's own message.
            rc, out, err, _ = run_cmd(r.prefix + ["/bin/true"], 30)
            if rc != 0:
                status = "timed out" if rc is None else status_text(rc)
                r.reason = (f"`zvisor run --platform={plat} -- /bin/true`: {status}"
                            + (f": {why_line(err)}" if why_line(err) else ""))
            else:
                r.reason = probe_microbench(r, 60) or ""
                r.available = not r.reason
                # e.g. zpoline falling back to sud without page 0: say so.
                r.note = last_line(err)
        runners.append(r)

    # gVisor: runsc from Debian, host filesystem read-only under a memory
    # overlay, no network at all (--network=none).
    gv_ptrace = Runner("gvisor-ptrace", "gVisor runsc ptrace", [], "gvisor")
    gv_kvm = Runner("gvisor-kvm", "gVisor runsc kvm", [], "gvisor")
    why = None
    if want("gvisor-ptrace") or want("gvisor-kvm"):
        why = ensure_tool("runsc", "runsc", not args.no_install)
    flags_ok = None
    if not want("gvisor-ptrace") and not want("gvisor-kvm"):
        pass
    elif why:
        gv_ptrace.reason = gv_kvm.reason = why
    else:
        # --ignore-cgroups first: a killed sandbox then leaves no cgroups
        # behind, and the sandbox's cgroup limits nothing here anyway.
        variants = [["--ignore-cgroups"], []]
        variants += [["--rootless", "--ignore-cgroups"], ["--rootless"]]
        tried = []
        for extra in variants:
            gv_ptrace.prefix = ["runsc", "--platform=ptrace", "--network=none"] + extra + ["do"]
            err = probe_microbench(gv_ptrace, 60)
            if not err:
                flags_ok = extra
                break
            tried.append(f"[{' '.join(gv_ptrace.prefix)}] {err}")
        if flags_ok is None:
            gv_ptrace.reason = "runsc does not run here: " + "; ".join(tried)
        else:
            gv_ptrace.available = True
        if not want("gvisor-kvm"):
            pass
        elif args.skip_kvm:
            gv_kvm.reason = "not tried (--skip-kvm)"
        elif not os.path.exists("/dev/kvm"):
            gv_kvm.reason = "no /dev/kvm"
        else:
            gv_kvm.prefix = (["runsc", "--platform=kvm", "--network=none"]
                             + (flags_ok or []) + ["do"])
            log(f"probing gVisor KVM platform (up to {KVM_PROBE_TIMEOUT:.0f} s)...")
            err = probe_microbench(gv_kvm, KVM_PROBE_TIMEOUT)
            if err and err.startswith("did not finish"):
                err = (f"`runsc --platform=kvm do` {err} (this runsc's KVM platform is "
                       f"known to hang on nested /dev/kvm)")
            gv_kvm.reason = err or ""
            gv_kvm.available = not err
    runners += [r for r in (gv_ptrace, gv_kvm) if want(r.key)]

    if want("strace"):
        st = Runner("strace", "strace -f", ["strace", "-f", "-o", "/dev/null"], "strace")
        why = ensure_tool("strace", "strace", not args.no_install)
        if why:
            st.reason = why
        else:
            st.reason = probe_microbench(st, 60) or ""
            st.available = not st.reason
        runners.append(st)
    return runners


# ---------------------------------------------------------------------------
# measuring

RESULT_RE = re.compile(r"op=(\S+) ns_per_op=([\d.]+) min=([\d.]+) max=([\d.]+) "
                       r"batches=(\d+) iters_per_batch=(\d+)")


def measure(runner, op, args):
    # A measurement takes about budget seconds plus start-up and calibration;
    # one that hangs is killed, and that op is not tried again on that runner.
    timeout = max(30.0, 20 * args.budget)
    if op in runner.timeouts:
        return None, "not run again after timing out", 0.0
    rc, out, err, secs = run_cmd(
        runner.argv("-b", str(args.batches), "-t", str(args.budget), op), timeout,
        env=runner.env)
    if runner.kind == "gvisor":
        runsc_cleanup()
    m = RESULT_RE.search(out or "")
    if rc == 0 and m:
        return float(m.group(2)), None, secs
    if rc is None:
        runner.timeouts.add(op)
        return None, f"timed out after {timeout:.0f} s", secs
    return None, f"{status_text(rc)}: {why_line(err) or why_line(out) or 'no output'}", secs


def run_all(runners, ops, args):
    active = [r for r in runners if r.available]
    samples = {op: {r.key: [] for r in active} for op in ops}
    errors = {op: {r.key: [] for r in active} for op in ops}
    for rep in range(args.reps):
        # Rotate the order each repetition so no runner always follows another.
        order = active[rep % len(active):] + active[:rep % len(active)]
        for op in ops:
            parts = []
            for r in order:
                ns, err, secs = measure(r, op, args)
                if ns is None:
                    errors[op][r.key].append(err)
                    parts.append(f"{r.key}=FAIL")
                else:
                    samples[op][r.key].append(ns)
                    parts.append(f"{r.key}={fmt_us(ns / 1000)}")
            log(f"[rep {rep + 1}/{args.reps}] {OP_LABEL[op]:<22} " + "  ".join(parts))
    return samples, errors


# ---------------------------------------------------------------------------
# formatting

def fmt_us(us):
    if us >= 1000:
        return f"{us:,.0f}"
    if us >= 100:
        return f"{us:.0f}"
    if us >= 10:
        return f"{us:.1f}"
    if us >= 1:
        return f"{us:.2f}"
    return f"{us:.3f}"


def fmt_ratio(x):
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x"


def fmt_faster(v):
    """v = other runner's time / this runner's time."""
    if v >= 1:
        return f"{fmt_ratio(v)} faster"
    return f"{fmt_ratio(1 / v)} slower"


def medians(samples):
    return {op: {k: (statistics.median(v) if v else None) for k, v in per.items()}
            for op, per in samples.items()}


def build_table(runners, ops, med, errors):
    active = [r for r in runners if r.available]
    header = ["op"] + [r.label for r in active]
    rows = []
    for op in ops:
        row = [OP_LABEL[op]]
        base = med[op].get("native")
        for r in active:
            v = med[op].get(r.key)
            if v is None:
                row.append("fails")
            elif r.key == "native" or not base:
                row.append(fmt_us(v / 1000))
            else:
                row.append(f"{fmt_us(v / 1000)} ({fmt_ratio(v / base)})")
        rows.append(row)
    return header, rows


def markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def text_table(header, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


# ---------------------------------------------------------------------------
# issue-3 targets

def evaluate_targets(runners, med, ops):
    """One entry per (zvisor platform, target)."""
    keys = {r.key for r in runners if r.available}
    out = []

    def ratio(op, key, base_key="native"):
        a, b = med.get(op, {}).get(key), med.get(op, {}).get(base_key)
        return a / b if a and b else None

    for plat in ZVISOR_PLATFORMS:
        key = f"zvisor-{plat}"
        if key not in keys:
            continue

        def add(name, checks, fmt, single=False):
            # This platform's failed cell fails the target ("fails"); a row
            # whose other side (native, sud, strace) failed is left out.
            checks = [(op, v, ok and v is not None) for op, v, ok in checks
                      if v is not None or med.get(op, {}).get(key) is None]
            if not checks:
                return
            show = lambda v: "fails" if v is None else fmt(v)
            if single:
                detail = show(checks[0][1])
            else:
                detail = ", ".join(f"{OP_LABEL[op]} {show(v)}" for op, v, _ in checks)
            out.append({"platform": plat, "target": name,
                        "ok": all(ok for _, _, ok in checks), "detail": detail})

        add("host-bound call (getppid, read, write) <= 1.10x native",
            [(op, ratio(op, key), (ratio(op, key) or 0) <= 1.10)
             for op in HOST_BOUND if op in ops], fmt_ratio)
        if "exec" in ops:
            add("fork+execve /bin/true <= 1.2x native",
                [("exec", ratio("exec", key), (ratio("exec", key) or 0) <= 1.2)], fmt_ratio,
                single=True)
        if "getpid" in ops:
            add("getpid answered by the kernel <= 0.25x native",
                [("getpid", ratio("getpid", key), (ratio("getpid", key) or 0) <= 0.25)],
                fmt_ratio, single=True)
        rows = [op for op in SYSCALL_BOUND if op in ops]
        if plat != "sud" and "zvisor-sud" in keys:
            checks = []
            for op in rows:
                r = ratio(op, "zvisor-sud", key)    # how many times faster than sud
                checks.append((op, r, (r or 0) >= 10))
            add("syscall-bound rows >= 10x faster than zvisor sud", checks, fmt_faster)
        if "strace" in keys:
            checks = []
            for op in rows:
                r = ratio(op, "strace", key)
                checks.append((op, r, (r or 0) >= 100))
            add("syscall-bound rows >= 100x faster than strace", checks, fmt_faster)
    return out


def target_lines(targets, runners):
    lines = []
    have_zpoline = any(r.key == "zvisor-zpoline" and r.available for r in runners)
    if not have_zpoline:
        lines.append("(the targets are for --platform=zpoline, which this zvisor does not "
                     "have yet; the SIGSYS platforms are shown against them for reference "
                     "and are expected to fail)")
    for t in targets:
        lines.append(f"{'PASS' if t['ok'] else 'FAIL'}  {t['platform']:<8} {t['target']}: "
                     f"{t['detail']}")
    return lines


# ---------------------------------------------------------------------------
# outputs

def machine_info():
    info = {"kernel": platform.release(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["glibc"] = " ".join(platform.libc_ver())
    info["loadavg"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for name, argv in [("zvisor", [ZVISOR, "--version"]), ("runsc", ["runsc", "--version"]),
                       ("strace", ["strace", "-V"])]:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10,
                               stdin=subprocess.DEVNULL)
            info[name] = (r.stdout or r.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.TimeoutExpired):
            info[name] = None
    return info


def spread_table(runners, ops, samples):
    active = [r for r in runners if r.available]
    header = ["op"] + [r.label for r in active]
    rows = []
    for op in ops:
        row = [OP_LABEL[op]]
        for r in active:
            v = samples[op].get(r.key) or []
            row.append(f"{fmt_us(min(v) / 1000)}-{fmt_us(max(v) / 1000)}" if v else "-")
        rows.append(row)
    return header, rows


def ensure_matplotlib(allow_install):
    try:
        import matplotlib  # noqa: F401
        return None
    except ImportError:
        pass
    if not allow_install:
        return "matplotlib is not installed (installation disabled)"
    log("matplotlib not importable: trying pip install matplotlib ...")
    for extra in ([], ["--break-system-packages"]):
        try:
            r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                                "--disable-pip-version-check"] + extra + ["matplotlib"],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"pip install matplotlib failed: {e}"
        if r.returncode == 0:
            break
    try:
        import importlib
        importlib.invalidate_caches()
        import matplotlib  # noqa: F401
        return None
    except ImportError:
        return f"pip install matplotlib failed: {last_line(r.stderr) or r.returncode}"


def write_png(path, runners, ops, med):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    others = [r for r in runners if r.available and r.key != "native"]
    fig, ax = plt.subplots(figsize=(max(10, 1.1 * len(ops)), 5.5))
    width = 0.8 / max(1, len(others))
    lows = [med[op][r.key] / med[op]["native"] for r in others for op in ops
            if med[op].get(r.key) and med[op].get("native")]
    bottom = min([0.5] + [x / 2 for x in lows])
    for i, r in enumerate(others):
        xs, ys = [], []
        for j, op in enumerate(ops):
            v, base = med[op].get(r.key), med[op].get("native")
            x = j - 0.4 + width * (i + 0.5)
            if v and base:
                xs.append(x)
                ys.append(v / base)
            elif v is None and base:        # this runner's measurement failed
                ax.text(x, bottom * 1.1, "fails", rotation=90, ha="center", va="bottom",
                        fontsize=7, color="red")
        ax.bar(xs, ys, width, label=r.label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    top = max([10.0] + lows)
    ax.set_ylim(bottom=bottom, top=10 ** math.ceil(math.log10(top) + 0.05))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels([f"{OP_LABEL[op]}\n(native {fmt_us(med[op]['native'] / 1000)} µs)"
                        if med[op].get("native") else OP_LABEL[op] for op in ops],
                       rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("time per operation / native (log scale)")
    ax.set_title("zvisor microbenchmark: time per operation relative to native "
                 "(median of interleaved runs; lower is better)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    # ^C or a kill: still kill the measurement under way and clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run_main()
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        runsc_cleanup(final=True)


def run_main():
    global ZVISOR
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--budget", type=float, default=0.3,
                    help="seconds of timed batches per measurement (default 0.3)")
    ap.add_argument("--batches", type=int, default=5, help="timed batches per measurement")
    ap.add_argument("--ops", help="comma-separated subset of: " + ",".join(o for o, _ in OPS))
    ap.add_argument("--runners", help="comma-separated subset of runner keys "
                    "(zvisor-sud, zvisor-seccomp, zvisor-zpoline, strace, gvisor-ptrace, "
                    "gvisor-kvm); native is always run")
    ap.add_argument("--skip-kvm", action="store_true",
                    help=f"do not try gVisor's KVM platform (a {KVM_PROBE_TIMEOUT:.0f} s probe)")
    ap.add_argument("--no-install", action="store_true",
                    help="never apt-get/pip install anything")
    ap.add_argument("--install-deps-only", action="store_true",
                    help="install strace and runsc when missing, then exit")
    ap.add_argument("--zvisor", default=ZVISOR, help="zvisor binary (default build/zvisor)")
    ap.add_argument("--out", default=RESULTS, help="results directory (default bench/results)")
    args = ap.parse_args()
    ZVISOR = os.path.abspath(args.zvisor)

    if args.install_deps_only:
        bad = [w for w in (ensure_tool("strace", "strace", True),
                           ensure_tool("runsc", "runsc", True),
                           ensure_matplotlib(True)) if w]
        for w in bad:
            log(w)
        return 0      # the runners report what is missing; never fail the build

    if args.reps < 1 or args.batches < 1 or args.budget <= 0:
        ap.error("--reps, --batches and --budget must be positive")
    ops = [o for o, _ in OPS]
    if args.ops:
        ops = args.ops.split(",")
        unknown = [o for o in ops if o not in OP_LABEL]
        if unknown:
            ap.error(f"unknown op(s) in --ops: {', '.join(unknown)}")
    if not os.access(MICROBENCH, os.X_OK):
        log(f"{MICROBENCH} is missing: build it with `make -C bench build`")
        return 1

    t0 = time.monotonic()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    runners = make_runners(args)
    for r in runners:
        state = "ok" if r.available else f"unavailable: {r.reason}"
        if r.note:
            state += f" (it said: {r.note})"
        log(f"runner {r.label:<22} {state}")
    log(f"measuring: {args.reps} repetitions x {len(ops)} ops x "
        f"{sum(r.available for r in runners)} runners, interleaved")

    samples, errors = run_all(runners, ops, args)
    med = medians(samples)
    header, rows = build_table(runners, ops, med, errors)
    targets = evaluate_targets(runners, med, ops)
    elapsed = time.monotonic() - t0
    info = machine_info()
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")

    unavailable = [r for r in runners if not r.available]
    failures = []
    label = {r.key: r.label for r in runners}
    for op in ops:
        for key, errs in errors[op].items():
            if errs:
                why = "; ".join(dict.fromkeys(errs))      # distinct reasons, in order
                failures.append(f"{OP_LABEL[op]} under {label[key]}: {len(errs)}/{args.reps} "
                                f"runs failed: {why}")

    title = (f"µs per operation, median of {args.reps} interleaved runs "
             f"(each the median of {args.batches} batches); (Nx) = ratio to native")
    print()
    print(title)
    print(text_table(header, rows))
    if unavailable:
        print()
        for r in unavailable:
            print(f"unavailable: {r.label}: {r.reason}")
    if failures:
        print()
        for f in failures:
            print(f"failed: {f}")
    print()
    print("issue-3 targets:")
    for line in target_lines(targets, runners):
        print("  " + line)

    os.makedirs(args.out, exist_ok=True)
    runner_json = [{"key": r.key, "label": r.label, "available": r.available,
                    "reason": r.reason or None, "note": r.note or None,
                    "command": (r.prefix + ["microbench"]) if r.prefix or r.key == "native"
                    else None} for r in runners]
    data = {
        "date": when,
        "machine": info,
        "settings": {"reps": args.reps, "batches": args.batches, "budget_s": args.budget,
                     "elapsed_s": round(elapsed, 1)},
        "unit": "ns per operation",
        "ops": [{"key": op, "label": OP_LABEL[op]} for op in ops],
        "runners": runner_json,
        "samples_ns": samples,
        "errors": {op: {k: v for k, v in per.items() if v} for op, per in errors.items()},
        "median_ns": med,
        "ratio_to_native": {op: {k: (v / med[op]["native"] if v and med[op].get("native")
                                     else None) for k, v in per.items()}
                            for op, per in med.items()},
        "targets": targets,
    }
    with open(os.path.join(args.out, "micro.json"), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

    sh, srows = spread_table(runners, ops, samples)
    md = [f"# zvisor microbenchmark", "",
          f"{when}; {info.get('cpu', '?')}, {info.get('cpus')} CPUs, Linux {info['kernel']}, "
          f"{info['glibc']}; zvisor: {info.get('zvisor')}; runsc: {info.get('runsc')}; "
          f"{info.get('strace')}. Whole run: {elapsed:.0f} s; load average "
          f"before {load_before}, after {info['loadavg']} (other work on the machine "
          f"shows in the spread below).", "",
          f"{title}. Static microbenchmark issuing raw `syscall` instructions "
          f"(bench/microbench.c).", "", markdown_table(header, rows), ""]
    if unavailable:
        md += ["Unavailable runners:", ""] + [f"- {r.label}: {r.reason}" for r in unavailable]
        md.append("")
    if failures:
        md += ["Failures:", ""] + [f"- {f}" for f in failures] + [""]
    notes = []
    cg = med.get("clock_gettime", {})
    if cg.get("native") and (cg.get("gvisor-ptrace") or 0) > 10 * cg["native"]:
        notes.append("gVisor's clock_gettime costs a system call here: its vDSO falls back to "
                     "the real call (`runsc --strace do ...` shows every clock_gettime), so "
                     "that cell measures a ptrace round trip, not a vDSO read.")
    notes += [f"{r.label} printed: {r.note}" for r in runners if r.note]
    if notes:
        md += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    md += ["## Issue-3 targets", ""] + [f"- {l}" for l in target_lines(targets, runners)] + [""]
    md += ["## Spread across runs (µs, lowest-highest per-run median)", "",
           "Ptrace-based runners (strace, gVisor ptrace) swing several times with the load "
           "on the other vCPU; quote them as ranges.", "", markdown_table(sh, srows), ""]
    with open(os.path.join(args.out, "micro.md"), "w") as f:
        f.write("\n".join(md))

    png = os.path.join(args.out, "micro.png")
    why = ensure_matplotlib(not args.no_install)
    if why:
        print(f"\nno PNG: {why}")
    else:
        try:
            write_png(png, runners, ops, med)
        except Exception as e:      # a broken matplotlib must not lose the table
            print(f"\nno PNG: plotting failed: {e}")
            png = None
    outs = ["micro.json", "micro.md"] + (["micro.png"] if not why and png else [])
    shown = os.path.abspath(args.out)
    if shown.startswith(ROOT + os.sep):
        shown = os.path.relpath(shown, ROOT)
    print(f"\nwrote {', '.join(os.path.join(shown, o) for o in outs)}"
          f" ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
