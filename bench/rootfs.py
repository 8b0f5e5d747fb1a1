#!/usr/bin/env python3
"""A Debian root filesystem under each runner, in one run, on the same
rootfs (scripts/rootfs.sh's dev flavor: Debian 12 minbase with gcc and make):

  chroot    native: chroot as root, in a mount namespace of its own with
            /dev, /proc and /sys mounted (the reference)
  zvisor    zvisor run --root R --fake-root, as nobody
  zvisor-cold    the same, its attribute cache file (fakeid.cache, DESIGN
            29) deleted before each run, untimed
  zvisor-before  the same with another build (--before ZVISOR): a change
            against the build before it, paired with the same chroot runs
  zvisor-before-cold  and with its cache file deleted
  proot     PRoot built from source (PROOT_SRC=... scripts/build-proot.sh;
            this script runs it when PROOT is missing), seccomp on,
            proot -0 -r R -b /dev -b /proc -b /sys, as nobody
  bwrap     bubblewrap with a user namespace of its own (--unshare-user
            --uid 0), as nobody; only where user namespaces are allowed

Each runner has its own copy of the root (zvisor's extracted under
--fake-root with tar --same-owner, so that it keeps Debian's owners; PRoot's
and bwrap's by nobody's plain tar), with the local package repository bound
at /srv/zvisor-repo. Workloads:

  file-heavy  find /usr; ls -lR /usr; cat /usr/share/doc/*/copyright
  exec loop   200 execs of /bin/true from sh
  dpkg -i     uuid-runtime and sudo (maintainer scripts: a user added,
              chown, set-id files); purged between runs, untimed
  apt-get     apt-get install python3 from the local repository (py3compile
              included); purged between runs, untimed
  make -j2    a 24-file C project; make clean between runs, untimed

Paired runs (bench/paired.py's method): each repetition runs chroot and then
each runner back to back, each after one untimed warm-up; the table gives
each side's minimum and the median of the per-pair ratios with their range.
Host system calls per workload come from one more run of each under
`perf stat -e raw_syscalls:sys_enter` (else `strace -f -c`, which misses
calls newer than its table; PRoot's tracees cannot be traced twice: its row
counts the tracer's own calls under `strace -c`). The cost of the view per
path call: microbench's stat and openat+close inside the root, chroot
against zvisor with and without --root.

  python3 bench/rootfs.py [--reps 5] [--only file,exec,dpkg,apt,make]
      [--runners zvisor,proot,bwrap] [--before ZVISOR] [--no-counts]
      [--out bench/results]

Each zvisor runner has a cache directory of its own (XDG_CACHE_HOME).

Needs root (chroot, and to run the others as nobody). Writes
bench/results/rootfs.md."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import ROOT, log, markdown_table  # noqa: E402

USER = "nobody"
PROOT = os.environ.get("PROOT", "/opt/proot/bin/proot")
MICRO = os.path.join(ROOT, "build", "bench", "microbench")
REPO_GUEST = "/srv/zvisor-repo"
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
       "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}
TARGETS = {"file": "1.3x (PRoot 15x)", "apt": "1.3x (PRoot 2.5x)", "exec": "1.5x (PRoot 3x)"}


# --- the root and its copies ---------------------------------------------------------

def script(*args):
    r = subprocess.run(["sh", os.path.join(ROOT, "scripts", "rootfs.sh")] + list(args),
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def as_user(argv):
    pw = __import__("pwd").getpwnam(USER)
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups"] + argv


def chown_user(path):
    pw = __import__("pwd").getpwnam(USER)
    os.chown(path, pw.pw_uid, pw.pw_gid)


def userns_allowed():
    return subprocess.run(as_user(["unshare", "-U", "true"]), capture_output=True).returncode == 0


# --- runners ----------------------------------------------------------------------------

NATIVE_SH = r'''set -e
r=$1; repo=$2; shift 2
mount --rbind /dev "$r/dev"; mount -t proc proc "$r/proc"; mount --rbind /sys "$r/sys"
mount --bind "$repo" "$r/srv/zvisor-repo"
exec chroot "$r" "$@"'''


def is_zvisor(name):
    """zvisor with --root: this tree's (zvisor) or another build's
    (zvisor-before), each also with its attribute cache file deleted before
    each run (NAME-cold)."""
    return name in ("zvisor", "zvisor-cold", "zvisor-before", "zvisor-before-cold")


class Runner:
    def __init__(self, name, label, root, repo, zvisor=None, cache=None):
        self.name, self.label, self.root, self.repo, self.zvisor = name, label, root, repo, zvisor
        self.cache = cache  # XDG_CACHE_HOME of its own (zvisor's runners): one's cold file is not another's

    def before_run(self):
        """Untimed, before each run: a -cold runner starts without fakeid.cache."""
        if self.name.endswith("-cold"):
            try:
                os.unlink(os.path.join(self.cache, "zvisor", "fakeid.cache"))
            except FileNotFoundError:
                pass

    def argv(self, cmd):
        r, repo = self.root, self.repo
        if self.name == "chroot":
            return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", NATIVE_SH,
                    "sh", r, repo] + cmd
        if is_zvisor(self.name):
            return as_user([self.zvisor, "run", "--root", r, "--fake-root",
                            "--bind", "%s:%s" % (repo, REPO_GUEST), "--"] + cmd)
        if self.name == "zvisor-noroot":  # the view's cost: the same without --root
            return as_user([self.zvisor, "run", "--"] + cmd)
        if self.name == "proot":
            return as_user([PROOT, "-0", "-r", r, "-b", "/dev", "-b", "/proc", "-b", "/sys",
                            "-b", "%s:%s" % (repo, REPO_GUEST)] + cmd)
        if self.name == "bwrap":
            return as_user(["bwrap", "--unshare-user", "--uid", "0", "--gid", "0", "--bind", r, "/",
                            "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--ro-bind", "/sys", "/sys",
                            "--ro-bind", repo, REPO_GUEST, "--chdir", "/"] + cmd)
        raise ValueError(self.name)

    def run(self, cmd, timeout=1800, check=True, prefix=()):
        env = dict(ENV, XDG_CACHE_HOME=self.cache) if self.cache else ENV
        rc, out, err, secs = common.run_cmd(list(prefix) + self.argv(cmd), timeout, cwd="/", env=env)
        if check and rc != 0:
            raise RuntimeError("%s: %s: %s\n%s" % (self.name, " ".join(cmd), common.status_text(rc),
                                                   (err or out)[-1500:]))
        return secs, out


def prepare(name, tar, base):
    """A copy of the root for runner name, its owner's, under base."""
    d = os.path.join(base, name)
    os.mkdir(d)
    log("  extracting the root for %s" % name)
    if name == "chroot":
        subprocess.run(["tar", "--numeric-owner", "-xpf", tar, "-C", d], check=True)
    elif is_zvisor(name):
        chown_user(d)
        subprocess.run(as_user([zvisor_path, "run", "--fake-root", "--", "tar", "--numeric-owner",
                                "--same-owner", "-xpf", tar, "-C", d]), check=True, cwd="/")
    else:  # what a PRoot or bwrap user does: a plain tar, without the device nodes
        chown_user(d)
        subprocess.run(as_user(["tar", "--no-same-owner", "-xpf", tar, "-C", d, "--exclude=./dev/*"]),
                       check=True, cwd="/")
    return d


# --- workloads ------------------------------------------------------------------------

MAKEFILE = """SRC := $(wildcard *.c)
OBJ := $(SRC:.c=.o)
prog: $(OBJ)
\tgcc -o $@ $(OBJ)
%.o: %.c
\tgcc -O2 -c $< -o $@
clean:
\trm -f *.o prog
"""


def project_files():
    """A small C project: 24 files of a few functions each, and main."""
    files = {"Makefile": MAKEFILE}
    for i in range(24):
        body = ["#include <stdio.h>", "#include <string.h>", "#include <stdlib.h>"]
        for j in range(12):
            body.append("int f%d_%d(int x) { char b[64]; snprintf(b, sizeof b, \"%%d\", x * %d); "
                        "return (int)strlen(b) + atoi(b) %% %d; }" % (i, j, j + 3, j + 7))
        files["m%d.c" % i] = "\n".join(body) + "\n"
    decls = "".join("int f%d_0(int);\n" % i for i in range(24))
    calls = "".join("s += f%d_0(%d);\n" % (i, i) for i in range(24))
    files["main.c"] = "#include <stdio.h>\n%sint main(void) { int s = 0;\n%sprintf(\"%%d\\n\", s); return 0; }\n" % (
        decls, calls)
    return files


def write_project(root, owner):
    d = os.path.join(root, "tmp", "proj")
    os.makedirs(d, exist_ok=True)
    for name, text in project_files().items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    if owner:
        for p in [d] + [os.path.join(d, n) for n in os.listdir(d)]:
            chown_user(p)


FILE_HEAVY = ("find /usr >/dev/null; ls -lR /usr >/dev/null; "
              "cat /usr/share/doc/*/copyright >/dev/null")
EXEC_LOOP = "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done"
DPKG = "dpkg -i /srv/zvisor-repo/uuid-runtime_*.deb /srv/zvisor-repo/sudo_*.deb >/dev/null"
DPKG_RESET = "SUDO_FORCE_REMOVE=yes dpkg -P sudo uuid-runtime >/dev/null"  # sudo asks for it
APT = "apt-get install -y -q --no-install-recommends python3 >/dev/null"
APT_RESET = "apt-get purge -y -q --autoremove python3 >/dev/null"
MAKE = "make -s -C /tmp/proj -j2 && /tmp/proj/prog >/dev/null"
MAKE_RESET = "make -s -C /tmp/proj clean"

# name: (title, command, reset or None, setup or None)
WORKLOADS = {
    "file": ("file-heavy (find, ls -lR, cat copyright files)", FILE_HEAVY, None, None),
    "exec": ("200 execs of /bin/true from sh", EXEC_LOOP, None, None),
    "dpkg": ("dpkg -i uuid-runtime sudo", DPKG, DPKG_RESET, None),
    "apt": ("apt-get install python3 (local repository)", APT, APT_RESET,
            "apt-get update -q >/dev/null"),
    "make": ("make -j2 of a 25-file C project", MAKE, MAKE_RESET, None),
}


def sh(cmd):
    return ["/bin/sh", "-c", cmd]


def fmt_s(s):
    return "%.0f ms" % (s * 1000) if s < 10 else "%.1f s" % s


def measure(runners, names, reps, failed):
    """{(workload, runner): [(native s, runner s)]} from paired runs. A
    runner that cannot do a workload (its warm-up or a run fails) is left
    out of it, and failed[(workload, runner)] says why."""
    chroot = runners["chroot"]
    results = {}
    for w in names:
        title, cmd, reset, setup = WORKLOADS[w]
        for name, r in runners.items():
            try:
                if setup:
                    r.run(sh(setup))
                r.run(sh(cmd))  # warm-up
                if reset:
                    r.run(sh(reset))
            except RuntimeError as e:
                if name == "chroot":
                    raise
                failed[(w, name)] = why(e)
                log("  %s: %s cannot: %s" % (w, name, failed[(w, name)]))
        for rep in range(reps):
            for name, r in runners.items():
                if name == "chroot" or (w, name) in failed:
                    continue
                n, _ = chroot.run(sh(cmd))
                if reset:
                    chroot.run(sh(reset))
                try:
                    r.before_run()
                    z, _ = r.run(sh(cmd))
                    if reset:
                        r.run(sh(reset))
                except RuntimeError as e:
                    failed[(w, name)] = why(e)
                    continue
                results.setdefault((w, name), []).append((n, z))
            log("  %s: pair %d/%d" % (w, rep + 1, reps))
    return results


def why(err):
    """The line of a failed run's output that says why."""
    lines = [l.strip() for l in str(err).splitlines()[1:] if l.strip()]
    for l in lines:
        if "error" in l.lower() or "invalid" in l.lower() or "denied" in l.lower():
            return l[:160]
    return (lines[0] if lines else str(err).splitlines()[0])[:160]


def perf_works():
    """Whether perf can count the raw_syscalls tracepoint here."""
    if not shutil.which("perf"):
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"], capture_output=True, text=True)
    return r.returncode == 0 and re.search(r"^\d+,", r.stderr, re.M) is not None


def strace_counts(runners, names, tmp, failed):
    """{(workload, runner): host system calls of one run}. perf's count of
    the raw_syscalls tracepoint where it works: strace -c leaves out the
    calls its table lacks (strace 6.1: getxattrat, which zvisor makes for
    every getxattr under --root). PRoot's: its own calls only (strace
    without -f), since it traces its programs itself."""
    counts = {}
    use_perf = perf_works()
    for w in names:
        title, cmd, reset, setup = WORKLOADS[w]
        for name, r in runners.items():
            if (w, name) in failed:
                continue
            out = os.path.join(tmp, "strace-%s-%s" % (w, name))
            if use_perf and name != "proot":
                prefix = ["perf", "stat", "-x,", "-o", out, "-e", "raw_syscalls:sys_enter", "--"]
            else:
                prefix = ["strace", "-o", out, "-c"] + ([] if name == "proot" else ["-f"])
            try:
                r.before_run()
                r.run(sh(cmd), prefix=prefix)
            except RuntimeError as e:
                log("  counting %s %s: %s" % (w, name, e))
                continue
            if reset:
                r.run(sh(reset))
            with open(out) as f:
                for line in f:
                    tok = line.split()
                    m = re.match(r"^(\d+),[^,]*,raw_syscalls:sys_enter", line)
                    if m:
                        counts[(w, name)] = int(m.group(1))
                    elif len(tok) >= 5 and tok[-1] == "total":  # % seconds usecs/call calls [errors] total
                        counts[(w, name)] = int(tok[3])
    return counts


def view_cost(runners, zvisor):
    """ns per stat and per openat+close, inside the root: chroot, zvisor
    with --root, and zvisor on the host's root."""
    if not os.path.exists(MICRO):
        return None
    rows = []
    for op in ("stat", "openclose"):
        row = [op]
        for name in ("chroot", "zvisor", "zvisor-noroot"):
            r = runners.get(name)
            if r is None:
                row.append("n/a")
                continue
            prog = "/usr/local/bin/microbench" if name != "zvisor-noroot" else MICRO
            vals = []
            for _ in range(5):
                _, out = r.run([prog, op])
                vals.append(float(re.search(r"ns_per_op=([\d.]+)", out).group(1)))
            row.append("%.0f ns" % min(vals))
        rows.append(row)
    return rows


def commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    d = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True)
    return r.stdout.strip() + ("+changes" if d.stdout.strip() else "")


zvisor_path = common.ZVISOR


def main():
    global zvisor_path
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--runners", default="zvisor,proot,bwrap",
                    help="of zvisor, zvisor-cold (its attribute cache file deleted before each run), "
                         "zvisor-before (--before's build), zvisor-before-cold, proot, bwrap")
    ap.add_argument("--before", metavar="ZVISOR", help="another zvisor build for the runner zvisor-before")
    ap.add_argument("--no-counts", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the copies of the root")
    common.add_common_options(ap, "bubblewrap, strace, PRoot (scripts/build-proot.sh), the rootfs")
    args = ap.parse_args()
    zvisor_path = os.path.abspath(args.zvisor)
    if os.geteuid() != 0:
        sys.exit("rootfs.py: needs root (chroot, and to run the others as %s)" % USER)
    names = args.only.split(",")
    for w in names:
        if w not in WORKLOADS:
            sys.exit("rootfs.py: unknown workload %r (%s)" % (w, ", ".join(WORKLOADS)))
    want = args.runners.split(",")
    if any(w.startswith("zvisor-before") for w in want) and not args.before:
        sys.exit("rootfs.py: the runner zvisor-before needs --before ZVISOR")
    allow = not args.no_install
    notes = []
    for tool, pkg in (("bwrap", "bubblewrap"), ("strace", "strace")):
        why = common.ensure_tool(tool, pkg, allow)
        if why:
            notes.append(why)
    if "proot" in want and not os.access(PROOT, os.X_OK):
        r = subprocess.run(["sh", os.path.join(ROOT, "scripts", "build-proot.sh")])
        if r.returncode != 0 or not os.access(PROOT, os.X_OK):
            notes.append("PRoot: left out: not built (PROOT_SRC=SOURCE scripts/build-proot.sh)")
            want.remove("proot")
    tar = script("path", "dev")
    if not tar:
        log("building the root (scripts/rootfs.sh build dev)")
        subprocess.run(["sh", os.path.join(ROOT, "scripts", "rootfs.sh"), "build", "dev"], check=True)
        tar = script("path", "dev")
    repo = script("repo")
    if args.install_deps_only:
        return 0
    if "bwrap" in want and not (shutil.which("bwrap") and userns_allowed()):
        notes.append("bwrap: left out: %s" % ("no user namespaces for %s" % USER if shutil.which("bwrap")
                                              else "not installed"))
        want.remove("bwrap")

    t0 = time.monotonic()
    load0 = common.loadavg()
    base = tempfile.mkdtemp(prefix="zvbench-rootfs-", dir="/var/tmp")
    os.chmod(base, 0o755)
    # zvisor's site cache for nobody (whose HOME is not its own), on for
    # every runner alike: only zvisor reads it
    ENV["XDG_CACHE_HOME"] = os.path.join(base, "cache")
    os.mkdir(ENV["XDG_CACHE_HOME"])
    chown_user(ENV["XDG_CACHE_HOME"])
    try:
        runners = {}
        for name in ["chroot"] + want:
            d = prepare(name, tar, base)
            write_project(d, name != "chroot")
            if os.path.exists(MICRO):
                shutil.copy2(MICRO, os.path.join(d, "usr", "local", "bin", "microbench"))
                if name != "chroot":
                    chown_user(os.path.join(d, "usr", "local", "bin", "microbench"))
            cache = None
            if is_zvisor(name):
                cache = os.path.join(base, "cache-" + name)
                os.mkdir(cache)
                chown_user(cache)
            binary = os.path.abspath(args.before) if name.startswith("zvisor-before") else zvisor_path
            runners[name] = Runner(name, name, d, repo, binary, cache)
        failed = {}
        results = measure(runners, names, args.reps, failed)
        counts = {} if args.no_counts else strace_counts(runners, names, base, failed)
        vc_runners = dict(runners)
        if "zvisor" in runners:
            vc_runners["zvisor-noroot"] = Runner("zvisor-noroot", "", "", repo, zvisor_path)
        view = view_cost(vc_runners, zvisor_path)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    secs = time.monotonic() - t0
    text = report(results, counts, view, names, want, args, notes, secs, load0, tar, failed)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "rootfs.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)
    log("wrote %s" % common.shown_path(path))
    return 0


def before_rows(results, names):
    """zvisor against zvisor-before (and -cold against -before-cold): the
    median and range of the per-repetition quotients of their ratios."""
    rows = []
    for w in names:
        for new, old in (("zvisor", "zvisor-before"), ("zvisor-cold", "zvisor-before-cold")):
            a, b = results.get((w, new)), results.get((w, old))
            if not a or not b or len(a) != len(b):
                continue
            q = [(z1 / n1) / (z2 / n2) for (n1, z1), (n2, z2) in zip(a, b)]
            rows.append([WORKLOADS[w][0], "%s / %s" % (new, old), "%.2fx" % statistics.median(q),
                         "%.2f-%.2f" % (min(q), max(q))])
    return rows


def report(results, counts, view, names, want, args, notes, secs, load0, tar, failed):
    info = common.machine_info(zvisor_path, [("proot", [PROOT, "--version"]), ("bwrap", ["bwrap", "--version"])])
    proot_v = subprocess.run([PROOT, "--version"], capture_output=True, text=True).stdout if os.access(
        PROOT, os.X_OK) else ""
    m = re.search(r"(v\d[\w.+-]*)", proot_v)
    lines = ["# A Debian root under chroot, zvisor, PRoot and bwrap", ""]
    lines.append("%s; commit %s; %s, %s CPUs, Linux %s, glibc %s. Whole run: %.0f s; load average "
                 "before %s, after %s." % (datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                           commit(), info.get("cpu", "?"), info["cpus"], info["kernel"],
                                           info["glibc"].split()[-1], secs, load0, common.loadavg()))
    lines.append("")
    lines.append("Root: %s (Debian 12 minbase with gcc, make, libc6-dev: scripts/rootfs.sh build dev). "
                 "Runners: chroot as root in a mount namespace of its own with /dev, /proc, /sys "
                 "mounted; `zvisor run --root R --fake-root` (platform stubs) as nobody; PRoot %s "
                 "(built from source, seccomp on) `proot -0 -r R -b /dev -b /proc -b /sys` as nobody; "
                 "bwrap %s `--unshare-user --uid 0` as nobody (user namespaces are allowed on this "
                 "machine). The local repository is bound at /srv/zvisor-repo in each."
                 % (os.path.basename(tar), m.group(1) if m else "?", info.get("bwrap") or "?"))
    lines.append("")
    lines.append("Method: for each workload, one untimed warm-up per runner, then %d repetitions; each "
                 "runs chroot and then the runner back to back (a reset between runs, untimed: purge, "
                 "make clean). Ratio = runner / chroot per pair; the table gives the median ratio and "
                 "its range, and each side's minimum over the pairs. `~`: the range is wider than the "
                 "distance from 1.0 (noise as large as the effect). The VM is shared and noisy: read "
                 "the minima with the ratios." % args.reps)
    for n in notes:
        lines.append("")
        lines.append("Note: " + n)
    lines.append("")
    rows = []
    for w in names:
        for name in want:
            p = results.get((w, name))
            if (w, name) in failed:
                rows.append([WORKLOADS[w][0], name, "", "", "fails", failed[(w, name)], ""])
                continue
            if not p:
                continue
            ratios = [z / n for n, z in p]
            med, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
            rows.append([WORKLOADS[w][0], name, fmt_s(min(n for n, _ in p)), fmt_s(min(z for _, z in p)),
                         "%.2fx" % med, "%.2f-%.2f%s" % (lo, hi, " ~" if hi - lo > abs(med - 1) else ""),
                         TARGETS.get(w, "") if name == "zvisor" else ""])
    lines.append(markdown_table(["workload", "runner", "chroot min", "runner min", "median ratio",
                                 "ratio range", "target (zvisor)"], rows))
    before = before_rows(results, names)
    if before:
        lines.append("")
        lines.append("This build against --before's (%s), per repetition: its ratio to chroot over the "
                     "other's in the same repetition (each pair of runs back to back):"
                     % common.shown_path(os.path.abspath(args.before)))
        lines.append("")
        lines.append(markdown_table(["workload", "runners", "median", "range"], before))
    if counts:
        lines.append("")
        lines.append("Host system calls of one run (%s; PRoot: the tracer's own calls only under `strace -c`, "
                     "its programs' calls are made on top of these), and per call of chroot's run:"
                     % ("`perf stat -e raw_syscalls:sys_enter`" if perf_works() else "`strace -f -c`"))
        lines.append("")
        crows = []
        for w in names:
            base = counts.get((w, "chroot"))
            row = [WORKLOADS[w][0]]
            for name in ["chroot"] + want:
                c = counts.get((w, name))
                row.append("n/a" if c is None else ("{:,}".format(c) + (
                    " (%.2f)" % (c / base) if base and name != "chroot" else "")))
            crows.append(row)
        lines.append(markdown_table(["workload", "chroot"] + want, crows))
    if view:
        lines.append("")
        lines.append("The view's cost per path call (microbench, fastest of 5 runs, a file in the "
                     "root's /tmp): chroot; zvisor --root --fake-root; zvisor on the host's root:")
        lines.append("")
        lines.append(markdown_table(["call", "chroot", "zvisor --root", "zvisor, no --root"], view))
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(common.guarded_main(main))
