"""Differential tests of the classes of LTP syscall tests that passed natively
but failed under zvisor. Each guest in tests/guests reproduces one
class in a program of our own (LTP itself is not built here); what it checks
and what it prints natively are in its .desc. Each of its modes runs on two
builds (dynamic glibc and static musl: two libcs, two loaders) natively and
under every platform, and must give the same output and status; the native
run is checked against the .desc, so a broken guest cannot pass by failing
the same way twice.

  clone3args  clone302: clone3's struct read at the guest's size
  magiclinks  openat202, openat203: /proc magic links and openat2's resolve flags
  mapfill     munmap04, mmap17: memory calls over memory zvisor reserves
  sighold     sighold02: a held signal's handler never runs
  sigframe    signal06: a frame that cannot be written
  sigwait     sigwaitinfo01, sigtimedwait01, rt_sigtimedwait01
  dnotify     fcntl38: real-time signals that arrive during one call
  execcheck   execve04, execveat02: exec errors only the host's exec sees
  seccompargs prctl02: seccomp filter arguments refused in the host's order
  setpgidexec setpgid03: EACCES for a child that made an exec in its process
  nullpath    utimes01: a NULL path is EFAULT though zpoline's page 0 is readable
"""
import pytest

from guestdesc import check_native, compare_guest, get
from zvtest import PLATFORMS

GUESTS = ["clone3args", "magiclinks", "mapfill", "sighold", "sigframe", "sigwait", "dnotify", "execcheck", "seccompargs",
          "setpgidexec", "nullpath"]
# (build, mode): every mode of each guest (or its run without argument) on its subset
CASES = [(b, m) for g in GUESTS for b in get(g).builds(subset=True) for m in (list(get(g).modes) or [""])]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("build,mode", CASES)
def test_ltp_class(build, mode, platform):
    compare_guest(build, platform, mode)


@pytest.mark.native_only
@pytest.mark.parametrize("guest", GUESTS)
def test_native_without_argument(guest):
    """The run without argument, where a guest with modes has one (sighold:
    the signals it holds)."""
    check_native(guest)
