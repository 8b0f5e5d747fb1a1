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
