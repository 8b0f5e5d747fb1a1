"""Differential tests of the guests in tests/guests (DESIGN section 5): each
guest variant runs natively and under zvisor on each platform, and must give
the same stdout, stderr and exit status or terminating signal.

The native_only tests check the guests themselves (that they build and show
what the hard case expects), so a broken guest cannot make a comparison pass
by failing the same way twice."""
import os

import pytest

from zvtest import (GUEST_DIR, PLATFORMS, assert_same, compare, explain, guest, native_ok,
                    run_native, run_zv, status_text, zv_argv)

# dynamic glibc PIE, static glibc, static-pie glibc, static musl
VARIANTS = ["", ".static", ".static-pie", ".musl"]

SIGNAL_CASES = ["siginfo", "restart", "norestart", "altstack", "nested", "resethand",
                "timer_in_syscall", "sigsys_kill", "blockall", "sigsuspend", "threads",
                "sigaction", "ucontext"]
GO_PARTS = ["chan", "exec", "preempt", "signal", "files", "nil", "chroot"]

# sigsegv.c modes and the native outcome each must have
SEGV_MODES = {"raise": -11, "null": -11, "nullcall": -11, "abort": -6, "handler": 0,
              "ignored": -11, "blocked": -11, "efault": 0, "pending": 0}

# sandbox.c sections whose call zvisor may refuse with its documented errno:
# only ptrace; the guest's own SUD and seccomp (strict and filters) are
# emulated and must give the native result
SANDBOX_REFUSABLE = {"traceme"}
SANDBOX_ERRNO = "EINVAL"


def built(name):
    path = guest(name)
    if not os.path.exists(path):
        pytest.fail("guest %s is not built: run `make -C tests/guests` (make check builds them)" % name)
    return path


def variants(*names, extra=()):
    return [n + v for n in names for v in VARIANTS] + list(extra)


# --- simple guests: same output and status ----------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("hello", extra=["hello.nopie"]))
def test_hello(name, platform):
    compare([built(name)], platform, expect_native=native_ok(0))
    compare([built(name), "a", "b c"], platform, expect_native=native_ok(3))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_asm_no_libc(platform):
    compare([built("asmhello")], platform, expect_native=native_ok(7))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("regs"))
def test_registers(name, platform):
    """xmm/ymm/zmm/opmask, x87/mxcsr and all GPRs but rax/rcx/r11 survive
    raw syscalls in 4 threads while signal handlers clobber vector state."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("threads"))
def test_threads_and_fork(name, platform):
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("vfork"))
def test_vfork_posix_spawn(name, platform):
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("clone3"))
def test_clone3(name, platform):
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("fds"))
def test_kernel_fds_hidden(name, platform):
    """close_range(3, ~0U), dup2 onto every fd below RLIMIT_NOFILE and
    /proc/self/fd listings look native, and zvisor keeps working."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["fds", "fds.static"])
def test_kernel_fds_hidden_with_count(name, platform):
    """With --count zvisor holds fds of its own (the counter table and a copy
    of stderr): the guest still sees exactly the native fd table, and the
    report is still printed after the guest took every fd number."""
    report = "    calls    errors syscall\n"
    _, zv = compare([built(name)], platform, extra_opts=["--count"], expect_native=native_ok(0),
                    normalize_stderr=lambda err: err[:err.index(report)] if report in err else err)
    assert report in zv.stderr and " dup2\n" in zv.stderr, zv.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["fds", "fds.static"])
def test_kernel_fds_hidden_with_stats(name, platform):
    """--stats keeps only a copy of stderr: it is as invisible to fd-taking
    calls (fcntl, write) on the fast path as --count's fds."""
    compare([built(name)], platform, extra_opts=["--stats"], expect_native=native_ok(0),
            normalize_stderr=lambda err: "".join(l for l in err.splitlines(True)
                                                 if not l.startswith("zvisor: stats:")))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("syscalls"))
def test_fixed_syscalls(name, platform):
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("rawsys"))
def test_raw_syscall_numbers(name, platform):
    """Numbers past the table give -ENOSYS, high bits of rax are ignored,
    int $0x80 and the vsyscall page behave as on the host."""
    compare([built(name)], platform, expect_native=native_ok(0))


# --- signals ----------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("case", SIGNAL_CASES)
@pytest.mark.parametrize("name", ["signals", "signals.static"])
def test_signal_case(name, case, platform):
    compare([built(name), case], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["signals.static-pie", "signals.musl", "signals.nopie"])
def test_signals_all_cases(name, platform):
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_inherited_ignored_signals(platform):
    """Signals ignored by the parent stay ignored across zvisor's start (as
    across execve, e.g. under nohup), and the guest sees exactly those."""
    g = built("signals")
    wrap = "trap '' HUP USR2 PIPE; exec %s \"$@\""
    native = run_native(["/bin/sh", "-c", wrap % g, "sh", "sigaction"])
    native_ok(0)(native)
    assert "at start: 1(ignored) 12(ignored) 13(ignored)" in native.stdout, native.stdout
    zv = run_native(["/bin/sh", "-c", wrap % " ".join(zv_argv([g], platform)), "sh", "sigaction"])
    assert_same(native, zv, "signals sigaction started with HUP, USR2 and PIPE ignored")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", list(SEGV_MODES))
@pytest.mark.parametrize("name", variants("sigsegv"))
def test_fatal_signals(name, mode, platform):
    """raise(SIGSEGV), a NULL write, a NULL call and abort() kill the guest
    with the native signal; a handler recovers from a NULL write."""
    compare([built(name), mode], platform, expect_native=native_ok(SEGV_MODES[mode]))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("cancel"))
def test_deferred_signal_never_fails_a_call(name, platform):
    """A SIGCHLD deferred just before the kernel makes close() for the guest
    runs its handler first, then the call: close never fails with EINTR and
    always closes (a lost close once hung shell pipelines)."""
    compare([built(name)], platform, expect_native=native_ok(0))


# --- execve -----------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("execve"))
def test_execve(name, platform):
    """argv[0], /proc/self/exe, AT_EXECFN and auxv as native through an exec
    of /proc/self/exe from a multithreaded process and of a #! script; the
    errno of failing execs."""
    compare([built(name)], platform, expect_native=native_ok(7))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_execve_relative_path(platform):
    built("execve")
    compare(["./execve"], platform, cwd=str(GUEST_DIR), expect_native=native_ok(7))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_execve_found_in_path(platform):
    """zvisor looks PROGRAM up in PATH like execvp: argv[0] stays the bare
    name and AT_EXECFN is the path found."""
    built("execve")
    env = dict(os.environ, PATH="%s:%s" % (GUEST_DIR, os.environ.get("PATH", "/usr/bin:/bin")))
    compare(["execve"], platform, env=env, cwd="/", expect_native=native_ok(7))


# --- the guest's own sandboxing -----------------------------------------------

def sandbox_lines_match(native, zv):
    nl, zl = native.stdout.splitlines(), zv.stdout.splitlines()
    if len(nl) != len(zl):
        return False
    for a, b in zip(nl, zl):
        name = a.split(":", 1)[0]
        if a != b and not (name in SANDBOX_REFUSABLE and b == "%s: %s" % (name, SANDBOX_ERRNO)):
            return False
    return True


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", [n for n in variants("seccomp_exec") if not n.endswith(".musl")])
def test_guest_seccomp_inherited(name, platform):
    """The guest's own seccomp filter holds in a fork child and across
    execve, exactly as natively."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("sandbox"))
def test_guest_sandboxing(name, platform):
    """prctl(PR_SET_SYSCALL_USER_DISPATCH), seccomp filters (errno, trap,
    prctl), strict mode and PTRACE_TRACEME: each gives the native result or
    EINVAL, and the guest keeps running."""
    argv = [built(name)]
    native = run_native(argv)
    native_ok(0)(native)
    zv = run_zv(argv, platform)
    if not (sandbox_lines_match(native, zv) and native.stderr == zv.stderr
            and native.returncode == zv.returncode):
        raise AssertionError(explain(native, zv, "each line may also be 'NAME: %s' for %s"
                                     % (SANDBOX_ERRNO, sorted(SANDBOX_REFUSABLE))))


# --- Go -----------------------------------------------------------------------

def has_pku():
    """Protection keys: page 0 mapped execute-only is then unreadable."""
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and "pku" in line.split(":", 1)[1].split() for line in f)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("part", GO_PARTS + ["all"])
def test_go(part, platform):
    """Goroutines, os/exec (clone(CLONE_VM|CLONE_VFORK) with stack 0), SIGURG
    preemption, signal.Notify, files, nil pointers that must panic and be
    recovered (a readable page 0 breaks them: zpoline without PKU)."""
    if part in ("nil", "all") and platform.startswith("zpoline") and not has_pku():
        pytest.xfail("zpoline maps page 0, readable without protection keys")
    argv = [built("goguest")] + ([] if part == "all" else [part])
    compare(argv, platform, expect_native=native_ok(4))


# --- the guests themselves (run without zvisor) ---------------------------------

@pytest.mark.native_only
@pytest.mark.parametrize("name", variants("regs"))
def test_native_regs_guest(name):
    res = run_native([built(name)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "FAIL" not in res.stdout
    assert res.stdout.count("OK") >= 3


@pytest.mark.native_only
def test_native_signal_case_list():
    res = run_native([built("signals"), "--list"])
    assert res.stdout.split() == SIGNAL_CASES


@pytest.mark.native_only
def test_native_go_part_list():
    res = run_native([built("goguest"), "--list"])
    assert res.stdout.split() == GO_PARTS


@pytest.mark.native_only
@pytest.mark.parametrize("name", variants("signals", extra=["signals.nopie"]))
def test_native_signals_guest(name):
    res = run_native([built(name)])
    assert res.returncode == 0 and "FAIL" not in res.stdout, res.stdout + res.stderr
    out = res.stdout
    assert "SA_RESTART: read -> 4 'data' after 1 signal(s)" in out
    assert "no SA_RESTART: read -> -1 EINTR after 1 signal(s)" in out
    assert "SA_ONSTACK: handler on the alternate stack 1, SS_ONSTACK reported 1" in out
    assert "kill(self, SIGSYS): handler got signo=SIGSYS 1, si_code=SI_USER 1, si_pid=self 1" in out
    assert "nanosleep: -1 EINTR, remaining > 8s 1" in out
    assert "SA_NODEFER: 5 calls, max depth 5" in out


@pytest.mark.native_only
@pytest.mark.parametrize("name", variants("sigsegv"))
def test_native_sigsegv_guest(name):
    for mode, want in SEGV_MODES.items():
        res = run_native([built(name), mode])
        assert res.returncode == want, "%s %s: %s" % (name, mode, status_text(res.returncode))


@pytest.mark.native_only
@pytest.mark.parametrize("name", variants("threads", "vfork", "clone3", "fds", "syscalls",
                                          "rawsys", "sandbox", "hello")
                         + ["hello.nopie"])
def test_native_guest_succeeds(name):
    res = run_native([built(name)])
    assert res.returncode == 0 and "FAIL" not in res.stdout, res.stdout + res.stderr


@pytest.mark.native_only
@pytest.mark.parametrize("name", variants("execve"))
def test_native_execve_guest(name):
    res = run_native([built(name)])
    assert res.returncode == 7, res.stdout + res.stderr
    assert "exec missing file: -1 ENOENT" in res.stdout
    assert "exec file without x permission: -1 EACCES" in res.stdout
    assert "exec text file without #!: -1 ENOEXEC" in res.stdout
    assert "argv[0] renamed" in res.stdout
    assert "AT_EXECFN /proc/self/exe" in res.stdout
    assert "threads after exec: 1" in res.stdout
    assert "script: $0=script.sh $1=from-stage2 $#=1" in res.stdout


@pytest.mark.native_only
def test_native_go_guest():
    res = run_native([built("goguest")])
    assert res.returncode == 4, res.stdout + res.stderr
    assert "timed out" not in res.stdout and "unexpected" not in res.stdout
    assert "1000 sleepers woke: 1000" in res.stdout
