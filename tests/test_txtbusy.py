"""A running program's file refuses writes (ETXTBSY) between hosted
processes (kernel/sys/txtbusy.c, DESIGN "A running program's file"): every
call that writes or truncates it, natively against each platform with both
exec modes; the guest's own fcntl locks and /proc/locks as without it."""
import pytest

from guestdesc import builds, compare_guest
from zvtest import PLATFORMS

HOWS = ["inprocess", "host"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["run", "locks"])
@pytest.mark.parametrize("name", builds("txtbusy"))
def test_txtbusy(name, mode, platform, how):
    compare_guest(name, platform, mode, extra_opts=["--exec=" + how])


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_txtbusy_under_a_root(platform, how):
    """The same under --root, whose layer makes each call in its *at form
    (openat2 with a struct of its own, truncate of /proc/self/fd/N)."""
    compare_guest("txtbusy", platform, "run", extra_opts=["--root", "/", "--exec=" + how])
