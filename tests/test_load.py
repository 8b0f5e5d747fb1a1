"""Load the kernel must hold (issue 14; guest loadstorm.c): a POSIX timer
signal storm that leaves the program no time between signals, SIGTERM and
SIGINT sent into such a storm, 64 threads signalling each other, and a
bounded fork tree. Each runs natively and under every platform and must end
with the same output and status. Before the kernel held a deferred signal
blocked on the host until its delivery, the timer storm livelocked every
platform inside the kernel's own signal handler (stress-ng --timer)."""
import pytest

from zvtest import PLATFORMS, compare, guest, native_ok

MODES = ["timer", "timer-term", "threads", "forktree"]
# The storm is the case that broke; the other modes once per libc.
VARIANTS = {"timer": ["", ".static", ".static-pie", ".musl"], "timer-term": ["", ".musl"],
            "threads": ["", ".musl"], "forktree": ["", ".static"]}
CASES = [(m, v) for m in MODES for v in VARIANTS[m]]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode,variant", CASES)
def test_load(mode, variant, platform):
    compare([guest("loadstorm" + variant), mode], platform, expect_native=native_ok(0), timeout=60)
