"""Load the kernel must hold (guest loadstorm.c, loadstorm.desc):
a POSIX timer signal storm that leaves the program no time between signals,
SIGTERM and SIGINT sent into such a storm, 64 threads signalling each other,
and a bounded fork tree. Each runs natively and under every platform and
must end with the same output and status. Before the kernel held a deferred
signal blocked on the host until its delivery, the timer storm livelocked
every platform inside the kernel's own signal handler (stress-ng --timer)."""
import pytest

from guestdesc import compare_guest, get
from zvtest import PLATFORMS

LOAD = get("loadstorm")
# The storm is the case that broke: every build; the other modes on the subset.
CASES = [(b, m) for m in LOAD.modes for b in (LOAD.builds() if m == "timer" else LOAD.builds(subset=True))]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("build,mode", CASES)
def test_load(build, mode, platform):
    compare_guest(build, platform, mode)
