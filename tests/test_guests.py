"""Differential tests of the guests in tests/guests (DESIGN section 5): each
guest variant runs natively and under zvisor on each platform, and must give
the same stdout, stderr and exit status or terminating signal.

The native_only tests check the guests themselves (that they build and show
what the hard case expects), so a broken guest cannot make a comparison pass
by failing the same way twice.

What each guest does natively (its builds, modes, exit status or signal,
lines it prints, strict xfails) is in tests/guests/NAME.desc, read by
guestdesc.py; this file says how each is run and compared."""
import os

import pytest

from guestdesc import builds, built, check_native, compare_guest, get
from zvtest import GUEST_DIR, PLATFORMS, assert_same, compare, explain, run_native, run_zv, zv_argv

SIGNALS, GO, SANDBOX = get("signals"), get("go"), get("sandbox")


# --- simple guests: same output and status ----------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("hello"))
def test_hello(name, platform):
    compare_guest(name, platform)
    compare_guest(name, platform, "args")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_asm_no_libc(platform):
    compare_guest("asmhello", platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("regs"))
def test_registers(name, platform):
    """xmm/ymm/zmm/opmask, x87/mxcsr and all GPRs but rax/rcx/r11 survive
    raw syscalls in 4 threads while signal handlers clobber vector state."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("threads"))
def test_threads_and_fork(name, platform):
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("vfork"))
def test_vfork_posix_spawn(name, platform):
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("clone3"))
def test_clone3(name, platform):
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("fds"))
def test_kernel_fds_hidden(name, platform):
    """close_range(3, ~0U), dup2 onto every fd below RLIMIT_NOFILE and
    /proc/self/fd listings look native, and zvisor keeps working."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["madvise", "mremap", "code", "fork", "limit", "spawn"])
@pytest.mark.parametrize("name", builds("fdorder"))
def test_fd_numbers_while_kernel_reads_maps(name, mode, platform):
    """A guest thread's open takes the lowest free number while another
    thread's calls make the kernel read /proc/self/maps, and the kernel's
    own fds give way at the fd limit (DESIGN 40)."""
    compare_guest(name, platform, mode)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("fds", subset=True))
def test_kernel_fds_hidden_with_count(name, platform):
    """With --count zvisor holds fds of its own (the counter table and a copy
    of stderr): the guest still sees exactly the native fd table, and the
    report is still printed after the guest took every fd number."""
    report = "    calls    errors syscall\n"
    _, zv = compare_guest(name, platform, extra_opts=["--count"],
                          normalize_stderr=lambda err: err[:err.index(report)] if report in err else err)
    assert report in zv.stderr and " dup2\n" in zv.stderr, zv.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("fds", subset=True))
def test_kernel_fds_hidden_with_stats(name, platform):
    """--stats keeps only a copy of stderr: it is as invisible to fd-taking
    calls (fcntl, write) on the fast path as --count's fds."""
    compare_guest(name, platform, extra_opts=["--stats"],
                  normalize_stderr=lambda err: "".join(l for l in err.splitlines(True)
                                                       if not l.startswith("zvisor: stats:")))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("syscalls"))
def test_fixed_syscalls(name, platform):
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("rawsys"))
def test_raw_syscall_numbers(name, platform):
    """Numbers past the table give -ENOSYS, high bits of rax are ignored,
    int $0x80 and the vsyscall page behave as on the host."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("switchsys"))
def test_syscalls_in_jump_table_cases(name, platform):
    """Syscalls in a switch's cases: on stubs they get windows whose
    targets the jump table proves (intercept/jumptab.c); everywhere the
    calls and the fall-through behave as natively."""
    compare_guest(name, platform)


# --- signals ----------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("case", list(SIGNALS.modes))
@pytest.mark.parametrize("name", SIGNALS.builds(subset=True))
def test_signal_case(name, case, platform):
    compare_guest(name, platform, case)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", SIGNALS.builds(but=SIGNALS.subset))
def test_signals_all_cases(name, platform):
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_inherited_ignored_signals(platform):
    """Signals ignored by the parent stay ignored across zvisor's start (as
    across execve, e.g. under nohup), and the guest sees exactly those."""
    g = built("signals")
    wrap = "trap '' HUP USR2 PIPE; exec %s \"$@\""
    native = run_native(["/bin/sh", "-c", wrap % g, "sh", "sigaction"])
    SIGNALS.run("sigaction").check(native)
    assert "at start: 1(ignored) 12(ignored) 13(ignored)" in native.stdout, native.stdout
    zv = run_native(["/bin/sh", "-c", wrap % " ".join(zv_argv([g], platform)), "sh", "sigaction"])
    assert_same(native, zv, "signals sigaction started with HUP, USR2 and PIPE ignored")


SIGSEGV = get("sigsegv")


@pytest.mark.parametrize("name,mode,platform", [
    SIGSEGV.param(platform, mode, name, mode, platform, id="%s-%s-%s" % (name, mode, platform))
    for name in SIGSEGV.builds() for mode in SIGSEGV.modes for platform in PLATFORMS])
def test_fatal_signals(name, mode, platform):
    """raise(SIGSEGV), a NULL write, a NULL call and abort() kill the guest
    with the native signal; a handler recovers from a NULL write."""
    compare_guest(name, platform, mode)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("cancel"))
def test_deferred_signal_never_fails_a_call(name, platform):
    """A SIGCHLD deferred just before the kernel makes close() for the guest
    runs its handler first, then the call: close never fails with EINTR and
    always closes (a lost close once hung shell pipelines)."""
    compare_guest(name, platform)


# --- execve -----------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("execve"))
def test_execve(name, platform):
    """argv[0], /proc/self/exe, AT_EXECFN and auxv as native through an exec
    of /proc/self/exe from a multithreaded process and of a #! script; the
    errno of failing execs."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_execve_relative_path(platform):
    built("execve")
    compare(["./execve"], platform, cwd=str(GUEST_DIR), expect_native=get("execve").run().check)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_execve_found_in_path(platform):
    """zvisor looks PROGRAM up in PATH like execvp: argv[0] stays the bare
    name and AT_EXECFN is the path found."""
    built("execve")
    env = dict(os.environ, PATH="%s:%s" % (GUEST_DIR, os.environ.get("PATH", "/usr/bin:/bin")))
    compare(["execve"], platform, env=env, cwd="/", expect_native=get("execve").run().check)


# --- the guest's own sandboxing -----------------------------------------------

def sandbox_lines_match(native, zv):
    nl, zl = native.stdout.splitlines(), zv.stdout.splitlines()
    if len(nl) != len(zl):
        return False
    for a, b in zip(nl, zl):
        name = a.split(":", 1)[0]
        if a != b and not (name in SANDBOX.may_refuse and b == "%s: %s" % (name, SANDBOX.may_refuse[name])):
            return False
    return True


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("seccomp_exec"))
def test_guest_seccomp_inherited(name, platform):
    """The guest's own seccomp filter holds in a fork child and across
    execve, exactly as natively."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", SANDBOX.builds())
def test_guest_sandboxing(name, platform):
    """prctl(PR_SET_SYSCALL_USER_DISPATCH), seccomp filters (errno, trap,
    prctl), strict mode and PTRACE_TRACEME: each gives the native result or
    EINVAL, and the guest keeps running."""
    native = check_native(name)
    zv = run_zv([built(name)], platform, timeout=SANDBOX.timeout)
    if not (sandbox_lines_match(native, zv) and native.stderr == zv.stderr
            and native.returncode == zv.returncode):
        raise AssertionError(explain(native, zv, "each line may also be 'NAME: ERRNO' for %s"
                                     % SANDBOX.may_refuse))


# --- Go -----------------------------------------------------------------------

@pytest.mark.parametrize("part,platform", [
    GO.param(platform, "" if part == "all" else part, part, platform, id="%s-%s" % (part, platform))
    for part in list(GO.modes) + ["all"] for platform in PLATFORMS])
def test_go(part, platform):
    """Goroutines, os/exec (clone(CLONE_VM|CLONE_VFORK) with stack 0), SIGURG
    preemption, signal.Notify, files, nil pointers that must panic and be
    recovered (a readable page 0 breaks them: zpoline without PKU, a strict
    xfail in go.desc)."""
    compare_guest("goguest", platform, "" if part == "all" else part)


# --- the guests themselves (run without zvisor) ---------------------------------

@pytest.mark.native_only
@pytest.mark.parametrize("name", builds("regs"))
def test_native_regs_guest(name):
    res = check_native(name)
    assert res.stdout.count("OK") >= 3


@pytest.mark.native_only
def test_native_signal_case_list():
    res = run_native([built("signals"), "--list"])
    assert res.stdout.split() == list(SIGNALS.modes)


@pytest.mark.native_only
def test_native_go_part_list():
    res = run_native([built("goguest"), "--list"])
    assert res.stdout.split() == list(GO.modes)


@pytest.mark.native_only
@pytest.mark.parametrize("name", SIGNALS.builds())
def test_native_signals_guest(name):
    check_native(name)


@pytest.mark.native_only
@pytest.mark.parametrize("name", builds("sigsegv"))
def test_native_sigsegv_guest(name):
    for mode in get("sigsegv").modes:
        check_native(name, mode)


@pytest.mark.native_only
@pytest.mark.parametrize("name", builds("threads", "vfork", "clone3", "fds", "syscalls", "rawsys",
                                        "sandbox", "hello"))
def test_native_guest_succeeds(name):
    check_native(name)


@pytest.mark.native_only
@pytest.mark.parametrize("name", builds("execve"))
def test_native_execve_guest(name):
    check_native(name)


@pytest.mark.native_only
def test_native_go_guest():
    check_native("goguest")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", list(get("procreads").modes))
@pytest.mark.parametrize("name", builds("procreads", subset=True))
def test_procview_reads(name, mode, platform):
    """Reads of maps, smaps, numa_maps and smaps_rollup in every pattern
    (small, large, readv, pread anywhere, lseek back, a dup, mappings
    changed in between) give seq_file's bytes and counts; the text is made
    only as far as the reads reach (sys/procview.c)."""
    compare_guest(name, platform, mode)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("statusrace"))
def test_status_read_while_other_threads_mark(name, platform):
    """Threads reading their own status while other threads' marks come
    and go: procview's routes include every marked fd's reads before its
    open returns (sys/procview.c fold_for_mark, sys/layers.c's fold lock)."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("forksig"))
def test_signal_right_after_fork(name, platform):
    """A signal sent to a child at once after fork acts there (sys/proc.c,
    do_clone: the fork runs with signals held by the host)."""
    compare_guest(name, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", list(get("forkmask").modes))
@pytest.mark.parametrize("name", builds("forkmask", subset=True))
def test_signals_around_vfork(name, mode, platform):
    """Under a storm of signals, none reaches a handler while the guest
    blocks them all around Go's clone(CLONE_VM|CLONE_VFORK) (vfork), and
    one that comes as a call ends arrives without waiting for the next
    (late): the SIGSYS handler's restorer delivers what its way out did not
    see (intercept/sigsysret.S), and bits held there are no fast call's."""
    compare_guest(name, platform, mode)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("procview"))
def test_procview(name, platform):
    """/proc/self/maps, smaps, smaps_rollup, numa_maps and status show no
    zvisor region, handler or kernel-held signal (sys/procview.c)."""
    compare_guest(name, platform)
