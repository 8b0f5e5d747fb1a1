"""zvisor trace: the interface and its behaviours, against strace
6.1 where strace has the same option.

- parity: `zvisor trace -f -o` and `strace -f -o` on the same program give
  the same lines after normalising pids, addresses, random bytes and
  strace's <unfinished>/<resumed> splits, for the calls decoded in full;
- filters (-e trace= names, classes, regex, negation; -e status=failed),
  -c, -ff, --json, -e inject=, signal and exit lines;
- bad input: one line on stderr, exit 2, the guest not started."""
import json
import os
import re
import shutil
import signal

import pytest

from trace_parity import (DIFFERENT, GUEST_CASES, REAL_CASES, UNCOMPARABLE, lines_by_pid, normalise,
                          run_case)
from zvtest import ZVISOR, guest, run, status_text

pytestmark = pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")


def zv_trace(args, **kw):
    return run([str(ZVISOR), "trace"] + list(args), **kw)


def built(name):
    path = guest(name)
    if not os.path.exists(path):
        pytest.fail("guest %s is not built: run `make -C tests/guests` (make check builds them)" % name)
    return path


# --- parity with strace (the normalisation lives in trace_parity.py) --------

PARITY_CASES = [n for n in list(GUEST_CASES) + list(REAL_CASES) if n not in UNCOMPARABLE]


@pytest.mark.parametrize("case", PARITY_CASES)
def test_parity_with_strace(case):
    """Every line of strace -f and zvisor trace -f matches after normalising
    pids, addresses, times and random bytes (trace_parity.py says which
    calls and cases cannot match, and why)."""
    p = run_case(case)
    if p is None:
        pytest.skip("%s is not installed or not built" % case)
    assert (p.rz.stdout, p.rz.returncode) == (p.rs.stdout, p.rs.returncode), p.rz.stderr[-2000:]
    assert not p.diffs, "%s\n%s" % (p.summary(), "\n".join(
        "strace: %s\nzvisor: %s" % (a, b) for a, b in p.diffs[:40]))


def names(text):
    return [normalise(l).split("(")[0] for ls in lines_by_pid(text).values() for l in ls
            if not l.startswith(("---", "+++"))]


@pytest.mark.parametrize("expr", ["trace=openat,close", "trace=%file", "trace=%memory",
                                  "trace=/^(open|close)", "trace=!%memory,%signal", "status=failed"])
def test_filters_match_strace(expr, tmp_path):
    argv = ["sh", "-c", "cat /etc/hostname /nonexistent > /dev/null 2>&1; exit 0"]
    s, z = tmp_path / "s.txt", tmp_path / "z.txt"
    run(["strace", "-f", "-e", expr, "-o", str(s), "--"] + argv)
    zv_trace(["-f", "-e", expr, "-o", str(z), "--"] + argv)
    want = sorted(n for n in names(s.read_text()) if n not in DIFFERENT)
    got = sorted(n for n in names(z.read_text()) if n not in DIFFERENT)
    assert got == want


def test_summary_counts_match_strace(tmp_path):
    argv = [built("syscalls.static")]
    s, z = tmp_path / "s.txt", tmp_path / "z.txt"
    run(["strace", "-f", "-c", "-o", str(s), "--"] + argv)
    zv_trace(["-f", "-c", "-o", str(z), "--"] + argv)

    def table(text):
        rows = {}
        for l in text.splitlines():
            tok = l.split()
            if len(tok) >= 5 and re.match(r"^\d+\.\d+$", tok[0]) and tok[-1] != "total":
                rows[tok[-1]] = tok[3]
        return rows
    want, got = table(s.read_text()), table(z.read_text())
    assert got and got == want
    assert z.read_text().splitlines()[0].split() == "% time seconds usecs/call calls errors syscall".split()


def test_summary_times(tmp_path):
    """-c's seconds are real time (the TSC's cycles converted with the
    process's own measure of its rate): a 0.2 s sleep shows about 0.2 s."""
    z = tmp_path / "z.txt"
    res = zv_trace(["-f", "-c", "-o", str(z), "--", "sleep", "0.2"])
    assert res.returncode == 0, res
    row = [l.split() for l in z.read_text().splitlines() if l.endswith(" clock_nanosleep")]
    assert row and 0.15 <= float(row[0][1]) <= 2.0, z.read_text()


def test_summary_when_the_guest_disables_the_tsc(tmp_path):
    """Emulated strict seccomp disables rdtsc (PR_SET_TSC) in the middle of
    a -c run: zvisor times the rest with clocks, and the guest dies from
    its vDSO read as natively, with the table printed."""
    z = tmp_path / "z.txt"
    res = zv_trace(["-f", "-c", "-o", str(z), "--", built("vdso"), "strict"])
    assert res.returncode == -signal.SIGSEGV, res
    assert "fault in the kernel" not in res.stderr
    assert " prctl\n" in z.read_text() or z.read_text().rstrip().endswith("total"), z.read_text()


def test_inject(tmp_path):
    """The second openat fails with ENOENT, marked (INJECTED), as strace's
    own injection does; the program sees it."""
    argv = ["cat", "/etc/hostname"]
    s, z = tmp_path / "s.txt", tmp_path / "z.txt"
    spec = "inject=openat:error=ENOENT:when=3"
    rs = run(["strace", "-e", spec, "-e", "trace=openat", "-o", str(s), "--"] + argv)
    rz = zv_trace(["-e", spec, "-e", "trace=openat", "-o", str(z), "--"] + argv)
    assert (rz.stdout, rz.returncode) == (rs.stdout, rs.returncode)
    assert [normalise(l) for l in z.read_text().splitlines()] == [normalise(l) for l in s.read_text().splitlines()]
    assert "(INJECTED)" in z.read_text()


def test_inject_retval_and_delay():
    r = zv_trace(["-e", "inject=getppid:retval=42", "-e", "trace=getppid", "--", "sh", "-c", "echo $PPID"])
    assert r.stdout.strip() == "42" and "= 42 (INJECTED)" in r.stderr, r.stderr


def test_ff_one_file_per_process(tmp_path):
    base = tmp_path / "t"
    r = zv_trace(["-ff", "-o", str(base), "--", "sh", "-c", "/bin/true; /bin/true"])
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 3 and all(re.match(r"^t\.\d+$", f) for f in files), files
    assert sum("execve(\"/bin/true\"" in (tmp_path / f).read_text() for f in files) == 2


def test_json(tmp_path):
    out = tmp_path / "j.txt"
    r = zv_trace(["-f", "--json", "-o", str(out), "--", "sh", "-c", "cat /nonexistent; exit 3"])
    assert r.returncode == 3
    events = [json.loads(l) for l in out.read_text().splitlines()]
    opens = [e for e in events if e.get("syscall") == "openat" and e.get("error") == "ENOENT"]
    assert opens and all(e["return"] == -1 and e["errno"] == 2 and "pid" in e for e in opens)
    assert any(e.get("exit") == 3 for e in events) and any(e.get("exit") == 1 for e in events)


def test_signal_and_exit_lines(tmp_path):
    """A child killed by SIGSEGV, a parent that catches SIGCHLD in a handler
    (python), and the exit lines."""
    out = tmp_path / "t.txt"
    code = ("import os, signal, sys\n"
            "signal.signal(signal.SIGCHLD, lambda *a: None)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
            "os.waitpid(pid, 0)\nsys.exit(5)\n")
    r = zv_trace(["-f", "-o", str(out), "--", "python3", "-c", code])
    assert r.returncode == 5, r.stderr
    text = out.read_text()
    assert re.search(r"--- SIGSEGV \{si_signo=SIGSEGV, si_code=SI_USER, si_pid=\d+, si_uid=\d+\} ---", text), text[-2000:]
    assert re.search(r"\+\+\+ killed by SIGSEGV( \(core dumped\))? \+\+\+", text)
    assert re.search(r"--- SIGCHLD \{si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid=\d+, .*si_status=SIGSEGV", text)
    assert "+++ exited with 5 +++" in text


def test_vfork_and_threads_followed(tmp_path):
    out = tmp_path / "t.txt"
    r = zv_trace(["-f", "-o", str(out), "--", built("threads.static")])
    assert r.returncode == 0, r.stderr
    pids = lines_by_pid(out.read_text())
    assert len(pids) >= 3, pids.keys()  # threads and a forked child


def test_without_f_only_the_first_thread(tmp_path):
    out = tmp_path / "t.txt"
    zv_trace(["-o", str(out), "--", "sh", "-c", "/bin/true; exit 0"])
    text = out.read_text()
    assert 'execve("/bin/true"' not in text and "exit_group(0)" in text


BAD = [
    (["-e", "trace=nosuchcall"], "unknown syscall"),
    (["-e", "trace=%nosuchclass"], "unknown syscall class"),
    (["-e", "trace=/(open"], "bad regular expression"),
    (["-e", "inject=openat:error=ENOPE"], "unknown error"),
    (["-e", "inject=openat:when=0:error=ENOENT"], "bad when"),
    (["-e", "inject=openat"], "needs error=, retval= or a delay"),
    (["-o", "/nonexistent/dir/file"], "cannot open /nonexistent/dir/file"),
    (["-s", "x"], "bad string size"),
    (["-e", "bogus=1"], "unknown qualifier"),
]


@pytest.mark.parametrize("args,why", BAD, ids=[w for _, w in BAD])
def test_bad_input(args, why, tmp_path):
    marker = tmp_path / "ran"
    r = zv_trace(args + ["--", "sh", "-c", "touch %s" % marker])
    assert r.returncode == 2, status_text(r.returncode)
    assert why in r.stderr and r.stderr.count("\n") == 1 and r.stderr.startswith("zvisor:"), r.stderr
    assert not marker.exists()


def test_trace_options_on_run(tmp_path):
    out = tmp_path / "t.txt"
    r = run([str(ZVISOR), "run", "-e", "trace=openat", "-o", str(out), "--", "cat", "/etc/hostname"])
    assert r.returncode == 0 and "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3" in out.read_text()


def test_help():
    r = zv_trace(["--help"])
    assert r.returncode == 0 and "-e inject=" in r.stdout
