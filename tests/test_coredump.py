"""Core dumps of guests killed by a signal that dumps core (abort(),
raise(SIGQUIT) two calls deep, a SIGSEGV sent from outside to a loop, an
abort beside a spinning thread: tests/guests/coredump.c), natively and
under zvisor on every platform, with `ulimit -c unlimited`: the same status
and core bit, and `gdb -batch` on each core shows the same signal and the
same frames in every thread (the guest's functions where it took the
signal, never zvisor's code). docs/DESIGN.md, deaths that dump core.

The cores are found by the host's core_pattern in the run's own directory.
A pattern that pipes cores to a handler (systemd-coredump, apport) is
replaced by `core` for this module's tests where the test may write it
(root), and restored after them; elsewhere the tests skip."""
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from guestdesc import built, get
from zvtest import PLATFORMS, TEST_USER, Result, assert_same, status_text, user_command, zv_argv

CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")
GUEST = get("coredump")
MODES = list(GUEST.modes)
# mode -> the outermost frames of the signalled thread that the native
# backtrace must show, so that two broken runs never pass as equal
EXPECT = {
    "abort": ["abort", "inner", "outer", "main"],
    "quit": ["raise", "inner", "outer", "main"],
    "spin": ["spin_here", "main"],
    "threads": ["abort", "inner", "outer", "main"],
}


@pytest.fixture(scope="module")
def core_pattern():
    """The core_pattern the runs dump by: the host's, unless it pipes."""
    pattern = CORE_PATTERN.read_text().rstrip("\n")
    if not pattern.startswith("|"):
        yield pattern
        return
    try:
        CORE_PATTERN.write_text("core\n")
    except OSError as e:
        pytest.skip("core_pattern pipes cores to a handler (%s) and cannot be set here: %s" % (pattern, e))
    try:
        yield "core"
    finally:
        CORE_PATTERN.write_text(pattern + "\n")


def core_path(pattern, cwd, pid):
    """The file the host dumped pid's core to, by core(5)'s rules, or None."""
    if (Path("/proc/sys/kernel/core_uses_pid").read_text().strip() != "0" and "%p" not in pattern):
        pattern += ".%p"
    name = re.sub(r"%(.)", lambda m: {"p": str(pid), "%": "%"}.get(m.group(1), "*"), pattern)
    found = sorted(Path(cwd).glob(name)) if not name.startswith("/") else sorted(Path("/").glob(name[1:]))
    return found[-1] if found else None


def unlimited_core():
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def run_dump(argv, mode, cwd, timeout=60):
    """Runs argv (the guest and its mode, or zvisor running them) in cwd
    with the core limit raised; `spin` gets SIGSEGV from here once it
    spins. Returns a Result and the wait status."""
    argv, env, cwd = user_command(argv, cwd=str(cwd), user=TEST_USER)
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=unlimited_core, start_new_session=True)
    timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
    timer.start()
    try:
        first = b""
        if mode == "spin":
            first = proc.stdout.readline()
            time.sleep(0.3)  # well inside spin_here by now
            os.kill(proc.pid, signal.SIGSEGV)
        out, err = first + proc.stdout.read(), proc.stderr.read()
        _, status = os.waitpid(proc.pid, 0)
        proc.returncode = status  # reaped here
    finally:
        timer.cancel()
    rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return Result(out.decode(errors="replace"), err.decode(errors="replace"), rc), status, proc.pid


def backtraces(program, core):
    """gdb's account of a core: its signal line and, per thread, the
    function of each frame."""
    res = subprocess.run(["gdb", "-batch", "-nx", "-ex", "thread apply all bt", str(program), str(core)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    said = re.findall(r"^Program terminated with signal .*$", res.stdout, re.M)
    threads = []
    for line in res.stdout.splitlines():
        if line.startswith("Thread "):
            threads.append([])
        m = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", line)
        if m and threads:
            threads[-1].append(m.group(1).replace("__GI_", ""))  # glibc's internal alias, with its debug info
    return said, threads, res.stdout


def test_lists_modes():
    res = subprocess.run([built("coredump"), "--list"], stdout=subprocess.PIPE, text=True)
    assert res.stdout.split() == MODES


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("build", GUEST.builds())
@pytest.mark.parametrize("mode", MODES)
def test_core_shows_guest(mode, build, platform, core_pattern, tmp_path):
    assert shutil.which("gdb"), "gdb is not installed (scripts/install-deps.sh installs it)"
    if TEST_USER and platform.startswith("zpoline"):
        pytest.skip("the zpoline platform needs root to map page 0, not %s" % TEST_USER)
    program = built(build)
    seen = {}
    for what, argv in (("native", [program, mode]), ("zvisor", zv_argv([program, mode], platform))):
        cwd = tmp_path / what
        cwd.mkdir()
        os.chmod(cwd, 0o777)
        res, status, pid = run_dump(argv, mode, cwd)
        if what == "native":
            GUEST.run(mode).check(res)
            expected = res
        else:
            assert_same(expected, res, "%s %s (platform %s)" % (build, mode, platform))
        assert os.WCOREDUMP(status), "%s: %s, no core dumped\n%s" % (what, status_text(res.returncode), res.stderr)
        core = core_path(core_pattern, cwd, pid)
        assert core, "%s: the core of pid %d is not where core_pattern %r puts it" % (what, pid, core_pattern)
        seen[what] = backtraces(program, core)
        core.unlink()
    said, threads, text = seen["native"]
    n = len(EXPECT[mode])
    assert any(t[-n:] == EXPECT[mode] for t in threads), "native backtrace lacks %s:\n%s" % (EXPECT[mode], text)
    if mode == "threads":
        assert any(t[:1] == ["spin_here"] for t in threads), "native: no thread in spin_here:\n" + text
    assert seen["zvisor"][:2] == (said, threads), (
        "the core under zvisor differs from the native one\n--- native:\n%s\n--- zvisor:\n%s"
        % (text, seen["zvisor"][2]))
