"""Differential tests of the classes of LTP syscall tests that passed natively
but failed under zvisor (issue 14). Each guest in tests/guests reproduces one
class in a program of our own (LTP itself is not built here); it runs
natively and under every platform and must give the same output and status.
The native_only tests check that each guest shows what its LTP test checks,
so that a broken guest cannot pass by failing the same way twice."""
import os

import pytest

from zvtest import PLATFORMS, compare, guest, native_ok, run_native

# dynamic glibc PIE and static musl: two libcs, two loaders
VARIANTS = ["", ".musl"]


def built(name):
    path = guest(name)
    if not os.path.exists(path):
        pytest.fail("guest %s is not built: run `make -C tests/guests` (make check builds them)" % name)
    return path


def variants(name):
    return [name + v for v in VARIANTS]


# --- clone302: clone3's struct read at the guest's size ------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("clone3args"))
def test_clone3_args(name, platform):
    """An oversized struct with a nonzero tail is E2BIG, one whose tail is
    unreadable EFAULT, sizes out of range and bad fields the host's errnos;
    a zero tail is accepted, for fork-like and CLONE_VM children alike."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.native_only
def test_native_clone3_args():
    out = run_native([built("clone3args")]).stdout
    assert "size 90, tail crosses into PROT_NONE:        EFAULT" in out, out
    assert "size 96, nonzero tail:                       E2BIG" in out, out
    assert "size 96, zero tail:                          child status 0x700" in out, out
    assert "CLONE_VM|CLONE_VFORK, size 96:               child status 0x700" in out, out


# --- openat202, openat203: /proc magic links and openat2's resolve flags -------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("magiclinks"))
def test_magic_links(name, platform):
    """/proc/self/exe (the guest's executable under zvisor) opens as natively,
    and refuses as natively under RESOLVE_NO_MAGICLINKS, NO_SYMLINKS,
    BENEATH, IN_ROOT, NO_XDEV and O_NOFOLLOW; open_how's sizes give the
    host's errnos."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.native_only
def test_native_magic_links():
    out = run_native([built("magiclinks")]).stdout
    assert "openat2 /proc/self/exe NO_MAGICLINKS:          ELOOP" in out, out
    assert "openat2 /proc/self/exe O_RDONLY:               opened the executable" in out, out
    assert "how with a nonzero pad:                        E2BIG" in out, out


# --- munmap04, mmap17: memory calls over memory zvisor reserves ----------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("mapfill"))
def test_reserved_memory(name, platform):
    """MAP_FIXED_NOREPLACE over the stub regions, zpoline's entry page or the
    kernel's window fails with EEXIST (never ENOMEM), munmap and mprotect
    act there as on a hole after the host's argument checks, and filling the
    map count from 256 MiB up ends as natively (munmap04)."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.native_only
def test_native_reserved_memory():
    out = run_native([built("mapfill")]).stdout
    assert "fill stopped with ENOMEM\nanother mapping after the fill: ENOMEM\n" in out, out
    assert "munmap of a middle page (munmap04): ENOMEM" in out, out


# --- sighold02: a held signal's handler never runs ------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["read", "futex", "spin"])
@pytest.mark.parametrize("name", variants("sighold"))
def test_held_signals(name, mode, platform):
    """Every catchable signal, SIGSYS, SIGSEGV and SIGBUS included, sent to
    a child that holds them all stays pending (sigpending shows it) and its
    handler runs only when released, whether the child waits in read, in a
    futex or in guest code."""
    compare([built(name), mode], platform, expect_native=native_ok(0))


@pytest.mark.native_only
def test_native_held_signals():
    out = run_native([built("sighold")]).stdout
    assert "handlers run while held: 0\n" in out, out
    assert " 7 8 " in out and " 11 " in out and " 31 " in out, out


# --- signal06: a frame that cannot be written -------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", variants("sigframe"))
def test_unwritable_frame(name, platform):
    """A handler's frame on a read-only altstack: SIGSEGV (SI_KERNEL) runs
    instead, or kills when it cannot run; a thread flipping the altstack's
    protection under a stream of signals loses no register state."""
    compare([built(name)], platform, expect_native=native_ok(0))


@pytest.mark.native_only
def test_native_unwritable_frame():
    out = run_native([built("sigframe")]).stdout
    assert "ro-altstack: SIGHUP handler ran 0, SIGSEGV handler ran 1, si_code SI_KERNEL" in out, out
    assert "segv-onstack: killed by signal 11" in out, out
    assert "the double was lost" not in out, out


# --- sigwaitinfo01, sigtimedwait01, rt_sigtimedwait01 ------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("argv", [["sigwait", "sigwaitinfo"], ["sigwait", "sigtimedwait"],
                                  ["sigwait", "raw"], ["sigwait.musl", "raw"]])
def test_sigwait(argv, platform):
    """Waits for signals end as natively (EINTR for an empty set, the signal
    and its siginfo for a matching one, EAGAIN on timeout, EFAULT for bad
    pointers) and never hang."""
    compare([built(argv[0])] + argv[1:], platform, expect_native=native_ok(0))


@pytest.mark.native_only
def test_native_sigwait():
    out = run_native([built("sigwait"), "sigtimedwait"]).stdout
    assert "empty set: EINTR, handler ran 1" in out, out
    assert "blocked signal 10: signal 10, si_pid is the sender 1, SI_USER 1, handler ran 0" in out, out
    assert "bad timeout pointer: EFAULT" in out and "timed out" not in out, out
