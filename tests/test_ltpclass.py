"""Differential tests of the classes of LTP syscall tests that passed natively
but failed under zvisor (issue 14). Each guest in tests/guests reproduces one
class in a program of our own (LTP itself is not built here); it runs
natively and under every platform and must give the same output and status.
The native_only tests check that each guest shows what its LTP test checks,
so that a broken guest cannot pass by failing the same way twice."""
import pytest

from guestdesc import builds, check_native, compare_guest, get
from zvtest import PLATFORMS

# --- clone302: clone3's struct read at the guest's size ------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("clone3args", subset=True))
def test_clone3_args(name, platform):
    """An oversized struct with a nonzero tail is E2BIG, one whose tail is
    unreadable EFAULT, sizes out of range and bad fields the host's errnos;
    a zero tail is accepted, for fork-like and CLONE_VM children alike."""
    compare_guest(name, platform)


@pytest.mark.native_only
def test_native_clone3_args():
    check_native("clone3args")  # the lines in clone3args.desc


# --- openat202, openat203: /proc magic links and openat2's resolve flags -------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("magiclinks", subset=True))
def test_magic_links(name, platform):
    """/proc/self/exe (the guest's executable under zvisor) opens as natively,
    and refuses as natively under RESOLVE_NO_MAGICLINKS, NO_SYMLINKS,
    BENEATH, IN_ROOT, NO_XDEV and O_NOFOLLOW; open_how's sizes give the
    host's errnos."""
    compare_guest(name, platform)


@pytest.mark.native_only
def test_native_magic_links():
    check_native("magiclinks")  # the lines in magiclinks.desc


# --- munmap04, mmap17: memory calls over memory zvisor reserves ----------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("mapfill", subset=True))
def test_reserved_memory(name, platform):
    """MAP_FIXED_NOREPLACE over the stub regions, zpoline's entry page or the
    kernel's window fails with EEXIST (never ENOMEM), munmap and mprotect
    act there as on a hole after the host's argument checks, and filling the
    map count from 256 MiB up ends as natively (munmap04)."""
    compare_guest(name, platform)


@pytest.mark.native_only
def test_native_reserved_memory():
    check_native("mapfill")  # the lines in mapfill.desc


# --- sighold02: a held signal's handler never runs ------------------------------

SIGHOLD, SIGWAIT = get("sighold"), get("sigwait")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", list(SIGHOLD.modes))
@pytest.mark.parametrize("name", builds("sighold", subset=True))
def test_held_signals(name, mode, platform):
    """Every catchable signal, SIGSYS, SIGSEGV and SIGBUS included, sent to
    a child that holds them all stays pending (sigpending shows it) and its
    handler runs only when released, whether the child waits in read, in a
    futex or in guest code."""
    compare_guest(name, platform, mode)


@pytest.mark.native_only
def test_native_held_signals():
    check_native("sighold")  # the lines in sighold.desc


# --- signal06: a frame that cannot be written -------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("sigframe", subset=True))
def test_unwritable_frame(name, platform):
    """A handler's frame on a read-only altstack: SIGSEGV (SI_KERNEL) runs
    instead, or kills when it cannot run; a thread flipping the altstack's
    protection under a stream of signals loses no register state."""
    compare_guest(name, platform)


# --- sigwaitinfo01, sigtimedwait01, rt_sigtimedwait01 ------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", list(SIGWAIT.modes))
@pytest.mark.parametrize("name", builds("sigwait", subset=True))
def test_sigwait(name, mode, platform):
    """Waits for signals end as natively (EINTR for an empty set, the signal
    and its siginfo for a matching one, EAGAIN on timeout, EFAULT for bad
    pointers) and never hang."""
    compare_guest(name, platform, mode)


# --- fcntl38: real-time signals that arrive during one call ----------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", builds("dnotify", subset=True))
def test_queued_realtime_signals(name, platform):
    """One chmod sends a dnotify real-time signal per watching fd: each
    reaches the handler with its own si_fd. The first one that interrupts
    the kernel is held blocked on the host until delivered, so the others
    stay queued there (before, each overwrote the one deferred before it)."""
    compare_guest(name, platform)
