"""A restored process's own ids and CPU clocks (kernel/cr/pids.c, timers.c,
coord.c, sys/procview_status.c; docs/CHECKPOINT.md "What is restored how").
The host gives a restored process a new pid; the program goes on knowing
its old one everywhere: getpid, /proc/self, /proc/PID/... and its task
paths, /proc/self/status, the CPU clocks named by its pid or a thread's
tid, a child it forks after the restore (getppid, kill), a shell's $$ and
$PPID, and the new image of an exec, also one that leaves the process
(--exec=host). POSIX timers on its own CPU clock come back; a timer on a
thread's or another process's CPU clock, and a tree in which a process runs
as another host user, are refused with one line. Each guest says "ready"
on stderr and waits for a file named go (tests/guests/cr_ids.c): natively
the test makes go at once; under zvisor it first checkpoints and restores
the process (crharness.tree_cut)."""
import os

import pytest

import crharness as cr
import zvtest

G = "cr_ids"
PLATFORMS = ["stubs", "sud", "seccomp"]


def guest(*args, variant=""):
    return [zvtest.guest(G + variant)] + [str(a) for a in args]


# A shell cut while it waits for its child (cr_ids waitgo, which waits for
# go): after the restore its subshell's $$ and kill of it, a
# child shell's $PPID, a child reading /proc/$$/..., and ps (procps: /proc's
# listing, /proc/PID/stat) showing it as before the cut.
SHELL = r"""trap 'echo caught USR1' USR1
me=$$
ids() { ps -o pid=,ppid=,pgid=,sid= -p $$ 2>&1; }
before=$(ids)
"$0" waitgo
test "$(ids)" = "$before" && echo "ps -o pid,ppid,pgid,sid: ok" || echo "ps -o pid,ppid,pgid,sid: FAIL $(ids) / $before"
echo "ps -e lists \$\$: $(ps -e -o pid= 2>&1 | grep -cx " *$$")"
test "$(ls /proc/$$/task)" = "$$" && echo "/proc/\$\$/task lists \$\$: ok"
(test "$$" = "$me" && echo "subshell's \$\$: ok"; kill -USR1 $$)
sh -c 'test "$PPID" = "$1" && echo "child shell PPID: ok" || echo "child shell PPID: FAIL $PPID $1"' x $$
test "$(cat /proc/$$/comm)" = sh && echo "/proc/\$\$/comm, read by a child: ok"
test -d /proc/$$/task/$$ && echo "/proc/\$\$/task/\$\$: ok"
echo "/proc/\$\$/status, read by a child: $(sed -n "s/^\(Pid\|Tgid\|NSpid\):[[:space:]]*$$\$/\1 ok/p" /proc/$$/status)"
exit 3
"""


def same(nat, joined, what):
    """Same stdout and status; stderr the same lines (any order)."""
    assert (joined.stdout, joined.returncode) == (nat.stdout, nat.returncode), zvtest.explain(nat, joined, what)
    assert sorted(joined.stderr.splitlines()) == sorted(nat.stderr.splitlines()), zvtest.explain(nat, joined, what)


_native = {}


def native(key, argv, tmp, nready=1):
    if key not in _native:
        nat = cr.tree_native(argv, nready, tmp)
        assert "FAIL" not in nat.stdout, zvtest.explain(nat, nat, "native " + key)
        _native[key] = nat
    return _native[key]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_own_ids(platform, tmp_path):
    """cr_ids pids: after the restore the process, a thread, a child it
    forks and the image it then execs (a restored process's exec always
    leaves the process: the new image carries the ids in the exec state)
    read the old pid and tid wherever the program meets them, as
    natively."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native("pids", guest("pids"), tmp, 2)
    assert nat.returncode == 0, zvtest.explain(nat, nat, "native pids")
    joined, _ = cr.tree_cut(zvtest.zv_argv(guest("pids"), platform), 2, tmp)
    same(nat, joined, "cr_ids pids cut once ready, platform %s" % platform)


def test_own_ids_other_host(tmp_path):
    """The same where the restore takes the process as on another kernel
    (--other-host: its vDSO's clocks run in the kernel)."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native("pids", guest("pids"), tmp, 2)
    joined, _ = cr.tree_cut(zvtest.zv_argv(guest("pids")), 2, tmp, restore_opts=["--other-host"])
    same(nat, joined, "cr_ids pids cut once ready, restored --other-host")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shell_ids(platform, tmp_path):
    """A shell restored: its subshell knows it by $$ and signals it, a
    child shell's $PPID is its $$, /proc/$$/... names it, ps shows its
    pid, parent, group and session as before and finds it in /proc."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = ["/bin/sh", "-c", SHELL, zvtest.guest(G)]
    nat = native("shell", argv, tmp)
    assert nat.returncode == 3, zvtest.explain(nat, nat, "native shell")
    joined, _ = cr.tree_cut(zvtest.zv_argv(argv, platform), 1, tmp)
    same(nat, joined, "a shell cut once ready, platform %s" % platform)


@pytest.mark.parametrize("variant", ["", ".musl"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_own_cpu_clock_timers(platform, variant, tmp_path):
    """POSIX timers on the process's own CPU clock (CLOCK_PROCESS_CPUTIME_ID,
    which glibc makes pid 0's clock and musl passes as it is, and
    clock_getcpuclockid(getpid())) are saved and made again: each fires
    once after the restore, and a timer made then on
    clock_getcpuclockid(getpid()) works."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = guest("cputimer", variant=variant)
    nat = native("cputimer" + variant, argv, tmp)
    assert nat.returncode == 0, zvtest.explain(nat, nat, "native cputimer")
    joined, _ = cr.tree_cut(zvtest.zv_argv(argv, platform), 1, tmp)
    same(nat, joined, "cr_ids%s cputimer cut once ready, platform %s" % (variant, platform))


@pytest.fixture
def running():
    """Start programs with running(argv, ...); all are killed at the end."""
    started = []

    def start(argv, **kw):
        kw.setdefault("as_user", cr.user())
        g = cr.Running(argv, **kw)
        started.append(g)
        return g

    yield start
    for g in started:
        g.kill()


def refused(argv, nready, tmp, running):
    """argv under zvisor checkpointed once its processes said ready: the
    checkpoint's Result (the guest is then killed)."""
    g = running(zvtest.zv_argv(argv), cwd=tmp)
    if not g.wait_for(cr.readies(nready), 60, stderr=True):
        raise AssertionError("%s never said ready %d times\n%s" % (argv, nready, g.result_text()))
    res = cr.zv("checkpoint", g.pid, os.path.join(tmp, "image"), as_user=cr.user())
    assert g.proc.poll() is None, "the guest ended at a refused checkpoint\n" + g.result_text()
    assert not os.path.exists(os.path.join(tmp, "image")), "a refused checkpoint left an image"
    return res


@pytest.mark.parametrize("variant", ["", ".musl"])
@pytest.mark.parametrize("args,what", [(["threadtimer", "own"], "a thread's"),
                                       (["threadtimer", "other"], "a thread's"),
                                       (["childtimer"], "another process's")], ids=["own-thread", "thread", "child"])
def test_other_cpu_clock_timer_refused(args, what, variant, tmp_path, running):
    """A timer on a thread's CPU clock (/proc/self/timers does not say
    which thread made one on CLOCK_THREAD_CPUTIME_ID) or another process's
    cannot be made again for the restored thread or process: one line."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    res = refused(guest(*args, variant=variant), 2 if args[0] == "childtimer" else 1, tmp, running)
    lines = res.stderr.splitlines()
    assert res.returncode == 1 and len(lines) == 1, res
    assert lines[0].startswith("zvisor: checkpoint: ") and lines[0].endswith(
        "POSIX timer 0: its clock (%s) is %s CPU clock" % (lines[0].split("(")[-1].split(")")[0], what)), res


def test_other_host_user_refused(tmp_path, running):
    """A tree whose child runs as another host user (setuid to nobody)
    could not be made again by one restoring user: one line."""
    cr.need_core()
    if os.geteuid() != 0 or cr.user():
        pytest.skip("setuid to another user needs root")
    tmp = cr.workdir(tmp_path)
    os.chmod(tmp, 0o777)
    res = refused(guest("setuid"), 2, tmp, running)
    lines = res.stderr.splitlines()
    assert res.returncode == 1 and len(lines) == 1, res
    assert "runs as another host user than the tree's first process (uid 65534 65534 65534 65534)" in lines[0], res
