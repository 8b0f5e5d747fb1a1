"""The guest's ptrace, emulated between zvisor-hosted processes: a tracer
and its tracee, both guests, each with its own kernel (docs/DESIGN.md, the
section on the guest's ptrace). Differential: each run natively and under
every platform gives the same output.

  ptracer   a tracer of our own (tests/guests/ptracer.c): syscall stops,
            registers, exec, signals, memory and breakpoints, single steps,
            attach and seize, fork and exit events
  ptstops   a tracee at its syscall stops (tests/guests/ptstops.c):
            signals sent to it there, SIGKILL, its tracer's end, and a
            tracer's waits mixing an ordinary child with its tracee
  ptjob     job control of a tracee (tests/guests/ptjob.c): its group stop
            and SIGCONT as its real parent's waits and SIGCHLDs see them
  ptprobe   what strace's own test suite found (tests/guests/ptprobe.c):
            exit stops of calls failing with EFAULT, GETREGSET lengths,
            CLONE_PTRACE, a suppressed signal's interrupted sleep made
            again, a thread's execve

A traced process's execve gives its tracer the same exec stop whichever
exec zvisor makes (--exec=inprocess, the default, or --exec=host): both
take the host's execve for a tracee (docs/DESIGN.md).
"""
import pytest

from guestdesc import compare_guest, get
from zvtest import PLATFORMS

CASES = [(b, m) for b in get("ptracer").builds(subset=True) for m in get("ptracer").modes]
STOPS = get("ptstops")
JOB = get("ptjob")
PROBE = get("ptprobe")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("build,mode", CASES)
def test_ptracer(build, mode, platform):
    compare_guest(build, platform, mode)


@pytest.mark.parametrize("build,mode,platform", [
    STOPS.param(p, m, b, m, p, id="%s-%s-%s" % (b, m, p))
    for b in STOPS.builds(subset=True) for m in STOPS.modes for p in PLATFORMS])
def test_at_syscall_stops(build, mode, platform):
    compare_guest(build, platform, mode)


@pytest.mark.parametrize("build,mode,platform", [
    JOB.param(p, m, b, m, p, id="%s-%s-%s" % (b, m, p))
    for b in JOB.builds(subset=True) for m in JOB.modes for p in PLATFORMS])
def test_job_control(build, mode, platform):
    compare_guest(build, platform, mode)


@pytest.mark.parametrize("build,mode,platform", [
    PROBE.param(p, m, b, m, p, id="%s-%s-%s" % (b, m, p))
    for b in PROBE.builds(subset=True) for m in PROBE.modes for p in PLATFORMS])
def test_strace_suite_probes(build, mode, platform):
    compare_guest(build, platform, mode)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("exec_mode", ["inprocess", "host"])
@pytest.mark.parametrize("mode", ["exec", "execevent"])
def test_exec_stop_either_exec(mode, exec_mode, platform):
    compare_guest("ptracer", platform, mode, extra_opts=["--exec=" + exec_mode])
