"""Helpers shared by run.py (microbenchmark) and workloads.py (whole programs).

Processes with a hard time limit, tool installation, the private /tmp/zvbench-*
directory, gVisor's probing and clean-up, tables, machine information and the
ratio plot.  Standard library only; matplotlib is imported only to plot.
"""

import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ZVISOR = os.path.join(ROOT, "build", "zvisor")
RESULTS = os.path.join(HERE, "results")


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
    with no_service_start():
        r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", pkg],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env)
    if r.returncode != 0 or not shutil.which(cmd):
        return f"apt-get install {pkg} failed: {last_line(r.stderr) or r.returncode}"
    return None


POLICY_RC_D = "/usr/sbin/policy-rc.d"


class no_service_start:
    """Installing redis-server or nginx would start them as system services
    (listening on every interface) unless a policy-rc.d forbids it, as
    container images usually do.  When there is none, put one in place for
    the duration of the apt-get run."""

    def __enter__(self):
        self.made = False
        if is_root() and not os.path.exists(POLICY_RC_D):
            with open(POLICY_RC_D, "w") as f:
                f.write("#!/bin/sh\n# zvisor bench: no services started during apt-get\nexit 101\n")
            os.chmod(POLICY_RC_D, 0o755)
            self.made = True
        return self

    def __exit__(self, *exc):
        if self.made:
            os.unlink(POLICY_RC_D)


# ---------------------------------------------------------------------------
# the private directory and gVisor

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


RUNSC_FLAG_VARIANTS = [["--ignore-cgroups"], [], ["--rootless", "--ignore-cgroups"], ["--rootless"]]


def find_runsc_prefix(probe):
    """The first `runsc --platform=ptrace --network=none FLAGS do` that runs.

    --ignore-cgroups first: a killed sandbox then leaves no cgroups behind,
    and the sandbox's cgroup limits nothing here anyway.  probe(prefix)
    returns None when a command run under prefix works, else why not.
    Returns (prefix, extra flags, None) or (None, None, why none runs)."""
    tried = []
    for extra in RUNSC_FLAG_VARIANTS:
        prefix = ["runsc", "--platform=ptrace", "--network=none"] + extra + ["do"]
        err = probe(prefix)
        runsc_cleanup()
        if not err:
            return prefix, extra, None
        tried.append(f"[{' '.join(prefix)}] {err}")
    return None, None, "runsc does not run here: " + "; ".join(tried)


# ---------------------------------------------------------------------------
# formatting and outputs

def fmt_sig(x):
    """x with three or more significant digits: 0.123, 1.23, 12.3, 123, 1,234."""
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_ratio(x):
    return (fmt_sig(x) if x >= 1 else f"{x:.2f}") + "x"


def fmt_faster(v):
    """v = other runner's time / this runner's time."""
    if v >= 1:
        return f"{fmt_ratio(v)} faster"
    return f"{fmt_ratio(1 / v)} slower"


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


def machine_info(zvisor=ZVISOR, tools=()):
    """Machine, kernel, libc, load average and `--version` lines of zvisor,
    runsc, strace and of tools: [(name, argv)]."""
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
    for name, argv in [("zvisor", [zvisor, "--version"]), ("runsc", ["runsc", "--version"]),
                       ("strace", ["strace", "-V"])] + list(tools):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10,
                               stdin=subprocess.DEVNULL)
            info[name] = (r.stdout or r.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.TimeoutExpired):
            info[name] = None
    return info


def add_common_options(ap, installs):
    """--no-install, --install-deps-only, --zvisor, --out."""
    ap.add_argument("--no-install", action="store_true",
                    help="never apt-get/pip install anything")
    ap.add_argument("--install-deps-only", action="store_true",
                    help=f"install what is missing: {installs}; then exit")
    ap.add_argument("--zvisor", default=ZVISOR, help="zvisor binary (default build/zvisor)")
    ap.add_argument("--out", default=RESULTS, help="results directory (default bench/results)")


def loadavg():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def shown_path(path):
    """path relative to the repository when it is inside it."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def guarded_main(run_main):
    """Run run_main(); on ^C or a kill still stop the measurement under way
    (run_cmd kills its process group) and remove the private directory."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run_main()
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        runsc_cleanup(final=True)


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


def plot_ratios(path, groups, series, ylabel, title):
    """Grouped bars on a log scale: groups are the x labels, series a list of
    (label, [ratio, or None when the cell failed, or "skip"]) per group."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(max(10, 1.1 * len(groups)), 5.5))
    width = 0.8 / max(1, len(series))
    values = [v for _, vs in series for v in vs if isinstance(v, float)]
    bottom = min([0.5] + [x / 2 for x in values])
    for i, (label, vs) in enumerate(series):
        xs, ys = [], []
        for j, v in enumerate(vs):
            x = j - 0.4 + width * (i + 0.5)
            if isinstance(v, float):
                xs.append(x)
                ys.append(v)
            elif v is None:                 # this runner's measurement failed
                ax.text(x, bottom * 1.1, "fails", rotation=90, ha="center", va="bottom",
                        fontsize=7, color="red")
        # Explicit colours: a series with no bars must not shift the others'.
        ax.bar(xs, ys, width, label=label, color=plt.get_cmap("tab10")(i % 10))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    top = max([10.0] + values)
    ax.set_ylim(bottom=bottom, top=10 ** math.ceil(math.log10(top) + 0.05))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
