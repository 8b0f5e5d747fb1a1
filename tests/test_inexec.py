"""The exec that never leaves the process (kernel/inexec.c, DESIGN "The exec
that never leaves the process"): what execve resets and keeps, natively,
with the in-process exec (the default) and with the host's (--exec=host),
on every platform; which execs fall back to the host's; that /proc/self/maps
and status after an in-process exec equal those after a host exec; and real
programs that exec in loops."""
import os
import re
import shutil

import pytest

from guestdesc import built, builds, compare_guest, get
from zvtest import PLATFORMS, TEST_USER, ZVISOR, assert_same, compare, native_ok, run, run_zv, zv_argv

EXECRESET = get("execreset")
HOWS = ["inprocess", "host"]
STATS = re.compile(r"^zvisor: stats: pid=(\d+) .* inexec=(\d+)$", re.M)


def stats_only(err):
    return "".join(l for l in err.splitlines(True) if not l.startswith("zvisor: stats:"))


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("execreset"))
def test_exec_resets(name, platform, how):
    """Every item set before the exec, checked in the new image: the same
    lines as natively."""
    compare_guest(name, platform, extra_opts=["--exec=" + how])


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["threads", "personality", "vfork", "chain"])
@pytest.mark.parametrize("name", builds("execreset", subset=True))
def test_exec_resets_modes(name, mode, platform, how):
    compare_guest(name, platform, mode, extra_opts=["--exec=" + how])


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["", "range", "recv", "high"])
@pytest.mark.parametrize("name", builds("cloexecfds"))
def test_close_on_exec_fds(name, mode, platform, how):
    """Fds made and marked by every kind of call, through a fork child's
    exec and a chain: the new image has the fds a native exec leaves, each
    with its flag (sys/fdflags.c follows them; what it cannot follow, the
    exec lists)."""
    compare_guest(name, platform, mode, extra_opts=["--exec=" + how])


def test_close_on_exec_fds_without_listing():
    """Where every call was followed, the exec closes the close-on-exec fds
    a run at a time and never lists /proc/self/fd; where one was not
    (CLOSE_RANGE_CLOEXEC, fds above 1024, MSG_CMSG_CLOEXEC), it lists."""
    if not shutil.which("strace"):
        pytest.skip("needs strace")
    name = built("cloexecfds")
    for mode, lists in (("", False), ("range", True), ("high", True), ("recv", True)):
        res = run(["strace", "-f", "-e", "trace=openat,close_range", "-o", "/dev/stderr",
                   str(ZVISOR), "run", "--", name] + ([mode] if mode else []))
        assert res.returncode == 0, res.stderr
        listed = '"/proc/self/fd"' in res.stderr
        assert listed == lists, (mode, res.stderr[-3000:])
        if not lists:
            assert "close_range(" in res.stderr, res.stderr[-3000:]


def opens_of(trace, names):
    """From strace -f output: the openat calls of a path ending in one of
    names, as (pid, the pid's execve calls before it)."""
    opens, execs = [], {}
    for line in trace.splitlines():
        m = re.match(r"(\d+)\s+(\w+)\((.*)", line)
        if not m:
            continue
        pid, call, args = m.groups()
        if call == "execve":
            execs[pid] = execs.get(pid, 0) + 1
        o = re.match(r'AT_FDCWD, "([^"]*)"', args)
        if call == "openat" and o and o.group(1).endswith(names):
            opens.append((pid, execs.get(pid, 0)))
    return opens


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("execve", subset=True))
def test_execve_guest_with_each_exec(name, platform, how):
    """execve.c (argv[0], /proc/self/exe, AT_EXECFN through fexecve's
    /dev/fd/N, a #! script, the errnos) through each exec: the host's
    takes the files the resolution opened (F), the copy of a close-on-exec
    fd too."""
    compare_guest(name, platform, extra_opts=["--exec=" + how])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_host_exec_takes_the_resolved_files(platform):
    """The program and interpreter an exec resolved are opened and read
    once: a vfork child's (dash's commands) and --exec=host's host execve
    hand them to the next image (exec-state field F), whose load neither
    opens nor fstats them again; a first start's load takes its own
    resolution's (sh's interpreter: one open). The guests see no fd of
    them (vfork.c's fds lines)."""
    if not shutil.which("strace"):
        pytest.skip("needs strace")
    names = ("/true", "/ld-linux-x86-64.so.2")
    for opts, script, want in (([], "/bin/true; /bin/true", 5), (["--exec=host"], "exec /bin/true", 3)):
        res = run(["strace", "-f", "-e", "trace=openat,execve", "-o", "/dev/stderr"]
                  + zv_argv(["/bin/sh", "-c", script], platform, opts))
        assert res.returncode == 0, res.stderr[-3000:]
        opens = opens_of(res.stderr, names)
        assert len(opens) == want, (opts, opens, res.stderr[-4000:])


# (mode, the leader's in-process execs): the fallbacks make none
TAKEN = [("", 1), ("chain", 5), ("threads", 1), ("personality", 0), ("vfork", 0)]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode,inexec", TAKEN)
def test_which_execs_stay_in_the_process(mode, inexec, platform):
    """--stats' inexec=N: the execs made in the process (the other threads
    killed first). A changed personality and a vfork child go to the host."""
    name = built("execreset")
    argv = [name] + ([mode] if mode else [])
    zv = run_zv(argv, platform, ["--stats"])
    leader = [int(n) for _, n in STATS.findall(zv.stderr)]
    assert zv.returncode == 0 and leader, zv.stderr
    assert max(leader) == inexec, zv.stderr
    host = run_zv(argv, platform, ["--stats", "--exec=host"])
    assert [int(n) for _, n in STATS.findall(host.stderr)] == [0] * len(STATS.findall(host.stderr)), host.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_maps_and_status_equal_those_after_a_host_exec(platform):
    """The new image's /proc/self/maps (without addresses) and status
    fields, through procview, as after the host's execve of zvisor."""
    argv = [built("execreset"), "maps"]
    here = run_zv(argv, platform, ["--exec=inprocess"])
    host = run_zv(argv, platform, ["--exec=host"])
    assert here.returncode == 0, here.stderr
    assert "maps:" in here.stdout and "status:Threads: 1" in here.stdout, here.stdout
    assert_same(host, here, "in-process exec (right) against the host's (left), platform %s" % platform)


def test_exec_option_is_checked():
    r = run_zv(["true"], None, ["--exec=sometimes"])
    assert r.returncode == 2, r
    assert r.stderr.splitlines()[0] == "zvisor: unknown exec mode 'sometimes' (inprocess, host)", r.stderr


# --- real programs that exec ---------------------------------------------------

def sh(script):
    return ["/bin/sh", "-c", script]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", ["stubs", "sud", "seccomp"])
def test_shell_exec_loop(platform, how):
    """A shell's fork+exec loop, exec replacing the shell, and a chain of
    execs through env and sh."""
    compare(sh("for i in 1 2 3 4 5 6 7 8; do /bin/echo $i; /bin/true; done; "
               "env -i A=1 /bin/sh -c 'exec env'; exec /bin/sh -c 'exec /bin/echo last'"),
            platform, ["--exec=" + how], expect_native=native_ok())


@pytest.mark.parametrize("platform", ["stubs", "sud"])
def test_make_j2(tmp_path, platform):
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("make or gcc missing")
    for i in range(6):
        (tmp_path / ("f%d.c" % i)).write_text("int f%d(void) { return %d; }\n" % (i, i))
    (tmp_path / "main.c").write_text("#include <stdio.h>\nint main(void) { puts(\"built\"); return 0; }\n")
    objs = " ".join("f%d.o" % i for i in range(6))
    (tmp_path / "Makefile").write_text(
        "all: prog\n\t@./prog\nprog: main.o %s\n\t@$(CC) -o $@ $^\n%%.o: %%.c\n\t@$(CC) -c -o $@ $<\n"
        "clean:\n\t@rm -f *.o prog\n" % objs)
    clean = lambda: run(["make", "-s", "clean"], cwd=str(tmp_path), user=TEST_USER)
    compare(["make", "-s", "-j2"], platform, cwd=str(tmp_path), setup=clean, expect_native=native_ok())


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_setid_exec_takes_the_files_ids(tmp_path, platform, how):
    """A set-user-ID and a set-group-ID program (copies of id and env owned
    by nobody) run by root: the exec gives the file's ids as effective and
    saved ids, and a secure exec (AT_SECURE: the dynamic loader drops
    LD_LIBRARY_PATH), and none for a plain program it execs, whether zvisor starts the program or a shell execs it
    (Go's TestSUID). A nosuid mount and no_new_privs are not covered here."""
    from zvtest import runs_as_root
    if not runs_as_root():
        pytest.skip("taking another user's ids needs root, natively and here")
    os.chmod(tmp_path, 0o755)
    for name, src, mode in (("suid", "/usr/bin/id", 0o4755), ("sgid", "/usr/bin/id", 0o2755),
                            ("suenv", "/usr/bin/env", 0o4755)):
        shutil.copy(src, tmp_path / name)
        os.chown(tmp_path / name, 65534, 65534)
        os.chmod(tmp_path / name, mode)
    d = str(tmp_path)
    script = ("cd %s && ./suid && ./sgid && LD_LIBRARY_PATH=/none ./suenv | grep -c LD_LIBRARY_PATH; "
              "./suenv LD_LIBRARY_PATH=/none /usr/bin/env | grep -c LD_LIBRARY_PATH; "
              "./suenv grep -E '^(Uid|Gid)' /proc/self/status" % d)
    compare(sh(script), platform, ["--exec=" + how], expect_native=native_ok())
    compare([d + "/suid"], platform, ["--exec=" + how], expect_native=native_ok())


def test_host_exec_carries_the_personality():
    """A vfork child's exec (the host's) hands the personality to the new
    image (exec-state field y) instead of it asking: the same bits as
    natively, the layout they ask for (ADDR_NO_RANDOMIZE: the heap in the
    same place for every command), one personality call per tree; a guest
    that changes it (setarch) has its next image ask."""
    if not shutil.which("setarch") or not shutil.which("strace"):
        pytest.skip("needs setarch and strace")
    show = "cat /proc/self/personality; grep -m1 heap /proc/self/maps; grep -m1 heap /proc/self/maps"
    for argv in (["setarch", "-R", str(ZVISOR), "run", "--", "sh", "-c", show],
                 [str(ZVISOR), "run", "--", "sh", "-c", "setarch -R sh -c '%s'" % show]):
        res = run(argv)
        persona, heap1, heap2 = res.stdout.splitlines()
        assert res.returncode == 0 and persona == "00040000" and heap1 == heap2, res
    res = run([str(ZVISOR), "run", "--", "sh", "-c", "cat /proc/self/personality; /bin/true"])
    assert res.stdout == run(["sh", "-c", "cat /proc/self/personality"]).stdout, res
    res = run(["strace", "-f", "-e", "trace=personality,execve", "-o", "/dev/stderr",
               str(ZVISOR), "run", "--", "sh", "-c", "/bin/true; /bin/true; setarch -R /bin/true"])
    assert res.returncode == 0, res.stderr
    starts = len(re.findall(r'execve\("/proc/(thread-)?self/exe"', res.stderr))
    assert starts == 4 and res.stderr.count("personality(0xffffffff)") == 2, res.stderr
