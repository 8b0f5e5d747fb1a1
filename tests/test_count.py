"""`zvisor run --count` proves completeness: for a deterministic guest the
number of calls (and failed calls) per syscall name must equal what
`strace -f -c` counts for the same program, except the calls zvisor itself
adds or removes, listed in EXPECTED_DIFFERENCES with the documented reason."""
import os
import shutil

import pytest

from zvtest import PLATFORMS, guest, parse_count_table, run_native, run_zv, status_text

# syscall name -> (zvisor calls minus strace calls, why). Filled from what is
# observed and documented; empty means "no difference allowed".
EXPECTED_DIFFERENCES = {}

PROGRAMS = {
    "asmhello": lambda: [guest("asmhello")],
    "hello.static": lambda: [guest("hello.static")],
    "hello.static-pie": lambda: [guest("hello.static-pie")],
    "syscalls.static": lambda: [guest("syscalls.static")],
    "syscalls.musl": lambda: [guest("syscalls.musl")],
    "syscalls": lambda: [guest("syscalls")],
    "busybox-true": lambda: ["busybox", "true"],
    "bin-true": lambda: ["/bin/true"],
    "sh-true": lambda: ["/bin/sh", "-c", "/bin/true; /bin/true"],
    # children made by vfork, posix_spawn, clone(CLONE_VM|CLONE_VFORK) with a
    # null stack and clone3 are counted like strace -f counts them
    "vfork.static": lambda: [guest("vfork.static")],
    "clone3.static": lambda: [guest("clone3.static")],
}


def strace_counts(argv, tmp_path):
    out = tmp_path / "strace.txt"
    # a native run too: as the test user, if any (busybox, for one, makes
    # other calls as root)
    res = run_native(["strace", "-f", "-c", "-o", str(out), "--"] + argv)
    assert res.returncode == run_native(argv).returncode, res.stderr
    return parse_count_table(out.read_text()), res


def check_program(argv):
    first = argv[0]
    if os.sep in first:
        if not os.path.exists(first):
            pytest.fail("%s is not built: run `make -C tests/guests` (make check builds them)" % first)
    elif not shutil.which(first):
        pytest.skip("%s is not installed" % first)
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_count_matches_strace(prog, platform, tmp_path):
    argv = PROGRAMS[prog]()
    check_program(argv)
    want, sres = strace_counts(argv, tmp_path)
    zv = run_zv(argv, platform, ["--count"])
    native = run_native(argv)
    # --count changes nothing the guest shows: same stdout and status; the
    # table is appended to the guest's stderr
    assert zv.stdout == native.stdout, "stdout changed by --count"
    assert zv.returncode == native.returncode, status_text(zv.returncode)
    assert zv.stderr.startswith(native.stderr), "guest stderr changed: %r" % zv.stderr
    got = parse_count_table(zv.stderr[len(native.stderr):])

    diffs = []
    for name in sorted(set(want) | set(got) - {"total"}):
        if name == "total" or name.endswith("[vdso]"):
            continue  # strace cannot see vDSO calls (test_vdso_time.py counts them)
        w, g = want.get(name, (0, 0)), got.get(name, (0, 0))
        delta = EXPECTED_DIFFERENCES.get(name, (0, ""))[0]
        if g[0] - w[0] != delta:
            diffs.append("%-20s calls: strace %d, zvisor %d" % (name, w[0], g[0])
                         + (" (expected difference %+d)" % delta if delta else ""))
        elif not delta and g[1] != w[1]:
            diffs.append("%-20s errors: strace %d, zvisor %d" % (name, w[1], g[1]))
    assert not diffs, "counts differ from strace -f -c:\n" + "\n".join(diffs)
    # the total row adds up
    if "total" in got:
        assert got["total"][0] == sum(c for n, (c, e) in got.items() if n != "total")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_count_syscalls_guest_exact(platform):
    """The calls syscalls.c makes on purpose appear with their exact numbers
    (this needs no strace)."""
    argv = [guest("syscalls.static")]
    check_program(argv)
    got = parse_count_table(run_zv(argv, platform, ["--count"]).stderr)
    assert got.get("getpid", (0, 0))[0] == 3, got
    assert got.get("sched_yield", (0, 0))[0] == 5, got
    assert got.get("clock_gettime", (0, 0))[0] == 1, got
    assert got.get("dup", (0, 0)) == (1, 0), got
    assert got.get("close", (0, 0)) == (5, 1), got
    assert got.get("openat", (0, 0))[1] == 2, got
    assert got.get("clone", (0, 0))[0] == 1, got
    assert got.get("vfork", (0, 0))[0] == 1, got
    assert got.get("wait4", (0, 0))[0] == 2, got
    # like strace -c, exit_group (which never returns) is not in the table


@pytest.mark.parametrize("platform", PLATFORMS)
def test_count_follows_children(platform):
    """Fork and exec children are counted too (strace -f): a shell running
    three /bin/true children shows two more execve than one running one."""
    sh1 = parse_count_table(run_zv(["/bin/sh", "-c", "/bin/true"], platform, ["--count"]).stderr)
    sh3 = parse_count_table(run_zv(["/bin/sh", "-c", "/bin/true; /bin/true; /bin/true"],
                                   platform, ["--count"]).stderr)
    assert sh3.get("execve", (0, 0))[0] - sh1.get("execve", (0, 0))[0] == 2, (sh1, sh3)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_count_go_exec_children(platform, tmp_path):
    """The Go runtime's own syscalls vary from run to run, but the execve
    calls of os/exec children (clone(CLONE_VM|CLONE_VFORK) with stack 0) do
    not: all of them, failed ones too, are counted."""
    argv = [guest("goguest"), "exec"]
    check_program(argv)
    want, _ = strace_counts(argv, tmp_path)
    got = parse_count_table(run_zv(argv, platform, ["--count"]).stderr)
    assert got.get("execve") == want.get("execve"), (got.get("execve"), want.get("execve"))
