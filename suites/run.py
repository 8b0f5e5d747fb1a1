#!/usr/bin/env python3
"""make check-suites: third-party test suites run natively and under each
zvisor platform in the same run. A test that passes natively and fails
under a platform is a loss; the run prints the losses, writes a JSON report
(build/suites/report.json) and exits 1 if there is any.

Suites (--suite, repeatable; default: all that are available):
  stress-ng  syscall-heavy stressors of the 'os' and 'interrupt' classes
  go         Go's standard library tests: os, os/exec, os/signal, syscall,
             time, net, runtime (built with `go test -c`, run -test.short)
  cpython    CPython's regrtest on system-level modules (Debian's
             libpython3.11-testsuite, /usr/bin/python3.11)
  ltp        LTP's runtest/syscalls from an installed LTP tree (--ltp-root,
             LTP_ROOT, default /opt/ltp: the directory holding runtest/ and
             testcases/bin/), built from its source by scripts/build-ltp.sh

Every test runs in its own session with a timeout; on timeout its whole
process group is killed, and any process that escaped into a new session is
found through the environment marker it inherited and killed too. Each test
has a scratch directory of its own as TMPDIR; what it leaves mounted there
is unmounted after it (never another running test's mounts), and what the
suite left mounted elsewhere when the suite is done."""
import argparse
import atexit
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ZVISOR = REPO / "build" / "zvisor"
OUT = REPO / "build" / "suites"
GO = shutil.which("go") or "/usr/local/go/bin/go"
PLATFORMS = ["stubs", "sud", "seccomp"]
MARK = "ZVISOR_SUITE_RUN"

STRESS_NG = ["access", "alarm", "brk", "chdir", "chmod", "chown", "clock", "clone", "close", "dentry",
             "dir", "dup", "epoll", "eventfd", "exec", "exit-group", "fcntl", "fifo", "flock", "fork",
             "fstat", "futex", "get", "getdent", "getrandom", "inotify", "itimer", "kill", "link",
             "madvise", "memfd", "mincore", "mlock", "mmap", "mprotect", "mremap", "msg", "munmap",
             "nanosleep", "nice", "null", "open", "pipe", "poll", "prctl", "pthread", "rename",
             "rlimit", "seek", "sem", "sendfile", "set", "sigchld", "sigfd", "sigpending", "sigpipe",
             "sigq", "sigrt", "sigsegv", "sigsuspend", "signal", "sleep", "sockpair", "splice",
             "switch", "symlink", "sysinfo", "tee", "timer", "timerfd", "touch", "urandom", "utime",
             "vfork", "wait", "yield", "zero", "zombie"]
GO_PACKAGES = ["os", "os/exec", "os/signal", "syscall", "time", "net", "runtime"]
CPYTHON_MODULES = ["test_os", "test_posix", "test_signal", "test_subprocess", "test_socket",
                   "test_select", "test_selectors", "test_time", "test_threading", "test_fcntl",
                   "test_mmap", "test_pty", "test_resource", "test_shutil", "test_tempfile",
                   "test_fileio", "test_pathlib", "test_glob", "test_stat", "test_pwd", "test_grp",
                   "test_errno", "test_epoll", "test_poll", "test_faulthandler", "test_sys",
                   "test_platform", "test_zlib", "test_sqlite3", "test_fork1", "test_wait4",
                   "test_ioctl", "test_getpass", "test_sched", "test_dbm", "test_file"]
QUICK = {"stress-ng": STRESS_NG[:8], "go": ["os/signal"], "cpython": CPYTHON_MODULES[:4], "ltp": 40}


def log(msg):
    print(msg, flush=True)


def mounts():
    try:
        with open("/proc/self/mountinfo") as f:
            return {line.split()[4] for line in f}
    except OSError:
        return set()


def kill_marked(token):
    """Kills every process that inherited this run's marker."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if ("%s=%s" % (MARK, token)).encode() in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def unmount_new(before, under=None):
    """Unmounts what was mounted since `before` (only below `under` if given),
    deepest first."""
    for m in sorted(mounts() - before, key=len, reverse=True):
        if under is None or m == under or m.startswith(under + "/"):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)


def execute(argv, timeout, cwd=None, env=None):
    """Runs argv in its own session, with a scratch directory of its own as
    TMPDIR (and cwd, unless given); returns (exit code or -signal or None
    for a timeout, output, seconds). What the unit mounted below its scratch
    directory is unmounted after it: only there, since units run in
    parallel and another's mounts are still in use (main() sweeps the rest
    when the suite is done)."""
    token = "%d.%d" % (os.getpid(), time.monotonic_ns())
    scratch = tempfile.mkdtemp(prefix="zv-unit-")
    os.chmod(scratch, 0o1777)  # as /tmp: tests that drop to nobody still reach their files
    env = dict(env or os.environ, **{MARK: token, "TMPDIR": scratch})
    before = mounts()
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd or scratch, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        kill_marked(token)
        proc.wait()
        out.seek(0)
        text = out.read().decode(errors="replace")
    unmount_new(before, scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    return code, text, time.monotonic() - t0


def under(platform, argv):
    return argv if platform == "native" else [str(ZVISOR), "run", "--platform=" + platform, "--"] + argv


class Suite:
    name = ""

    def available(self):
        return True, ""

    def prepare(self, quick):
        """Builds what is needed; returns the list of units to run."""
        return []

    def run_unit(self, unit, platform, timeout):
        """Returns {test name: 'pass' | 'fail' | 'skip'}."""
        raise NotImplementedError


class StressNg(Suite):
    name = "stress-ng"

    def available(self):
        return bool(shutil.which("stress-ng")), "stress-ng is not installed (scripts/install-suites.sh)"

    def prepare(self, quick):
        return QUICK["stress-ng"] if quick else STRESS_NG

    def run_unit(self, unit, platform, timeout):
        code, out, _ = execute(under(platform, ["stress-ng", "--" + unit, "1", "-t", "2", "--quiet"]), timeout)
        # stress-ng: 0 passed, 3 not implemented or skipped here
        return {unit: "pass" if code == 0 else "skip" if code == 3 else "fail"}


class GoStd(Suite):
    name = "go"

    def available(self):
        ok = os.path.exists(GO) and os.path.isdir(subprocess.run([GO, "env", "GOROOT"], capture_output=True,
                                                                 text=True).stdout.strip() + "/src/os")
        return ok, "Go with its source tree is not installed (scripts/install-deps.sh)"

    def prepare(self, quick):
        units = []
        for pkg in (QUICK["go"] if quick else GO_PACKAGES):
            binary = OUT / "go" / (pkg.replace("/", "_") + ".test")
            binary.parent.mkdir(parents=True, exist_ok=True)
            if not binary.exists():
                log("  building %s tests" % pkg)
                r = subprocess.run([GO, "test", "-c", "-o", str(binary), pkg], capture_output=True, text=True,
                                   env=dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOTOOLCHAIN="local"))
                if r.returncode != 0:
                    log("  cannot build %s tests: %s" % (pkg, r.stderr.strip()[-300:]))
                    continue
            units.append((pkg, str(binary)))
        return units

    def run_unit(self, unit, platform, timeout):
        pkg, binary = unit
        # the package's testdata: the tests run in the package's directory
        src = Path(subprocess.run([GO, "env", "GOROOT"], capture_output=True, text=True).stdout.strip()) / "src" / pkg
        code, out, _ = execute(under(platform, [binary, "-test.short", "-test.v", "-test.timeout", "%ds" % timeout]),
                               timeout + 30, cwd=str(src))
        results = {}
        for m in re.finditer(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", out, re.M):
            results["%s.%s" % (pkg, m.group(2))] = m.group(1).lower()
        if not results:
            results[pkg] = "pass" if code == 0 else "fail"
        return results


class CPython(Suite):
    name = "cpython"
    python = "/usr/bin/python3.11"

    def available(self):
        ok = os.path.exists(self.python) and subprocess.run(
            [self.python, "-c", "import test.test_os"], capture_output=True).returncode == 0
        return ok, "CPython's test package is not installed (apt-get install libpython3.11-testsuite)"

    def prepare(self, quick):
        return QUICK["cpython"] if quick else CPYTHON_MODULES

    def run_unit(self, unit, platform, timeout):
        workdir = Path(tempfile.mkdtemp(prefix="zv-py-"))
        xml = workdir / "junit.xml"
        code, out, _ = execute(under(platform, [self.python, "-m", "test", "--junit-xml", str(xml), "-u", "all,-network",
                                                "--timeout", str(timeout), unit]),
                               timeout + 60, cwd=str(workdir))
        results = {}
        if xml.exists():
            import xml.etree.ElementTree as ET
            try:
                for case in ET.parse(xml).iter("testcase"):
                    name = case.get("name") if not case.get("classname") else "%s.%s" % (
                        case.get("classname"), case.get("name"))
                    state = "pass"
                    for child in case:
                        if child.tag in ("failure", "error"):
                            state = "fail"
                        elif child.tag == "skipped":
                            state = "skip"
                    results[name] = state
            except ET.ParseError:
                pass
        if not results:
            results[unit] = "pass" if code == 0 else "fail"
        shutil.rmtree(workdir, ignore_errors=True)
        return results


class Ltp(Suite):
    name = "ltp"

    def __init__(self, root):
        self.root = Path(root) if root else None

    def available(self):
        ok = self.root is not None and (self.root / "runtest" / "syscalls").exists()
        return ok, "no LTP in %s: build it with LTP_SRC=SOURCE scripts/build-ltp.sh (suites/README.md)" % self.root

    def prepare(self, quick):
        entries = []
        for line in (self.root / "runtest" / "syscalls").read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, cmd = line.partition(" ")
                entries.append((name, cmd.strip()))
        return entries[:QUICK["ltp"]] if quick else entries

    def run_unit(self, unit, platform, timeout):
        name, cmd = unit
        env = dict(os.environ, LTPROOT=str(self.root), PATH="%s:%s" % (self.root / "testcases" / "bin",
                                                                       os.environ.get("PATH", "")),
                   LTP_TIMEOUT_MUL="1")
        code, out, _ = execute(under(platform, ["/bin/sh", "-c", cmd]), timeout, env=env)
        # LTP: 0 passed, 32 TCONF (not applicable here)
        return {name: "pass" if code == 0 else "skip" if code == 32 else "fail"}


# Host tunables a suite's test may change (LTP's fcntl30 and fcntl37 lower
# fs/pipe-max-size, others keys, inotify or mqueue limits) and restore only
# when it ends normally: a unit killed at its timeout would leave them.
TUNABLE_DIRS = ("fs", "kernel", "vm")
VOLATILE = re.compile(r"^(kernel/(ns_last_pid|random/.*|hung_task_.*)|vm/(drop_caches|compact_memory|stat_refresh)"
                      r"|fs/binfmt_misc/.*)$")


def host_tunables():
    """{path: value} of the writable files under /proc/sys/{fs,kernel,vm}."""
    values = {}
    for top in TUNABLE_DIRS:
        for root, _, files in os.walk("/proc/sys/" + top):
            for f in files:
                path = os.path.join(root, f)
                if VOLATILE.match(os.path.relpath(path, "/proc/sys")) or not os.access(path, os.W_OK):
                    continue
                try:
                    values[path] = Path(path).read_text()
                except OSError:
                    pass
    return values


def restore_tunables(before):
    """Writes back what the run changed, and says so."""
    for path, value in before.items():
        try:
            if Path(path).read_text() != value:
                Path(path).write_text(value)
                log("check-suites: %s was changed by a test; restored to %s" % (path, value.strip()))
        except OSError:
            pass


def unit_name(unit):
    """A unit's name: an LTP test's or a Go package's (tuples), else itself."""
    return unit[0] if isinstance(unit, tuple) else unit


def main():
    global ZVISOR
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", action="append", choices=["stress-ng", "go", "cpython", "ltp"])
    ap.add_argument("--platform", action="append", choices=["stubs", "zpoline", "sud", "seccomp"])
    ap.add_argument("--jobs", type=int, default=2, help="units run at once (default 2)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per unit (default 60; Go packages x5, CPython modules x3)")
    ap.add_argument("--quick", action="store_true", help="a small subset of each suite, for a smoke run")
    ap.add_argument("--only", action="append", metavar="PATTERN",
                    help="only the units whose name matches this shell pattern (repeatable): "
                         "a stressor, Go package, CPython module or LTP test, e.g. --only 'madvise*'")
    ap.add_argument("--ltp-root", default=os.environ.get("LTP_ROOT") or "/opt/ltp")
    ap.add_argument("--report", default=str(OUT / "report.json"))
    ap.add_argument("--zvisor", default=str(ZVISOR), help="the zvisor binary (default build/zvisor)")
    args = ap.parse_args()
    ZVISOR = Path(args.zvisor).resolve()
    if not ZVISOR.exists():
        sys.exit("check-suites: %s is missing: run `make` first" % ZVISOR)
    platforms = args.platform or PLATFORMS
    atexit.register(restore_tunables, host_tunables())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    suites = [StressNg(), GoStd(), CPython(), Ltp(args.ltp_root)]
    wanted = args.suite or [s.name for s in suites]
    report = {"platforms": platforms, "suites": {}, "losses": [], "flaky": []}
    t_all = time.monotonic()
    for suite in suites:
        if suite.name not in wanted:
            continue
        ok, why = suite.available()
        if not ok:
            log("%s: skipped: %s" % (suite.name, why))
            report["suites"][suite.name] = {"skipped": why}
            if args.suite:
                report["losses"].append({"suite": suite.name, "test": "(suite)", "platform": "all", "why": why})
            continue
        t0 = time.monotonic()
        suite_mounts = mounts()
        units = suite.prepare(args.quick)
        if args.only:
            units = [u for u in units if any(fnmatch.fnmatchcase(unit_name(u), g) for g in args.only)]
        log("%s: %d units on native + %s" % (suite.name, len(units), ", ".join(platforms)))
        # Go packages and CPython modules are units of many tests (test_signal
        # alone takes 47 s natively), LTP and stress-ng units are one test each
        timeout = args.timeout * {"go": 5, "cpython": 3}.get(suite.name, 1)
        results = {p: {} for p in ["native"] + platforms}

        def one(unit):
            out = {}
            for p in ["native"] + platforms:  # native and each platform back to back
                out[p] = suite.run_unit(unit, p, timeout)
            return unit, out

        def losses(out):
            # a test native passed and the platform did not report (its unit
            # timed out or died before it) is lost too
            return [(t, p) for p in platforms for t, s in out["native"].items()
                    if s == "pass" and out[p].get(t) != "pass"]

        done, lost_units = 0, []
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for unit, out in pool.map(one, units):
                done += 1
                for p, r in out.items():
                    results[p].update(r)
                lost = losses(out)
                if lost:
                    lost_units.append((unit, lost))
                label = unit_name(unit)
                log("  [%d/%d] %s%s" % (done, len(units), label,
                                        "" if not lost else "  LOST: " + ", ".join("%s on %s" % x for x in lost)))
        # A loss is run again alone, native and platforms: units that run in
        # parallel contend for loop devices and CPU (LTP's device tests take
        # the same free loop device; a fuzzy-sync race times out under load).
        # Only the second verdict counts; what passed then is listed as flaky.
        for unit, lost in lost_units:
            unit, out = one(unit)
            for p, r in out.items():
                results[p].update(r)
            again = set(losses(out))
            for t, p in lost:
                if (t, p) not in again:
                    report["flaky"].append({"suite": suite.name, "test": t, "platform": p})
            label = unit_name(unit)
            log("  again alone: %s%s" % (label, "  LOST: " + ", ".join("%s on %s" % x for x in sorted(again))
                                         if again else "  passes (flaky in parallel)"))
        unmount_new(suite_mounts)  # what units mounted outside their scratch directories
        native_pass = {t for t, s in results["native"].items() if s == "pass"}
        entry = {"seconds": round(time.monotonic() - t0, 1), "tests": len(results["native"]),
                 "native_pass": len(native_pass)}
        for p in platforms:
            entry[p + "_pass"] = sum(1 for t in native_pass if results[p].get(t) == "pass")
            for t in sorted(native_pass):
                if results[p].get(t) != "pass":
                    report["losses"].append({"suite": suite.name, "test": t, "platform": p,
                                             "result": results[p].get(t, "missing")})
        report["suites"][suite.name] = entry
        log("%s: %s" % (suite.name, ", ".join("%s %s" % (k, v) for k, v in entry.items())))
    report["seconds"] = round(time.monotonic() - t_all, 1)
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    log("\nlosses (pass natively, fail under zvisor): %d" % len(report["losses"]))
    for l in report["losses"]:
        log("  %s %s on %s: %s" % (l["suite"], l["test"], l["platform"], l.get("result", l.get("why"))))
    if report["flaky"]:
        log("flaky (lost in parallel, passed again alone): %d" % len(report["flaky"]))
        for l in report["flaky"]:
            log("  %s %s on %s" % (l["suite"], l["test"], l["platform"]))
    log("report: %s (%.0f s)" % (args.report, report["seconds"]))
    sys.exit(1 if report["losses"] else 0)


if __name__ == "__main__":
    main()
