"""Unit tests of kernel sources (tests/unit/NAME.c, built freestanding by
`make unit`): the classic-BPF checker and interpreter of the guest's seccomp
filters, virtual-time arithmetic and --time= parsing, the trace regex. Each
program prints one line per failed check; nothing here runs zvisor."""
import shutil
import subprocess
import threading

import pytest

from zvtest import REPO

UNITS = ["bpf", "vtime", "regex", "cr_fds"]
pytestmark = pytest.mark.native_only
_lock = threading.Lock()


def build(name):
    if not shutil.which("make"):
        pytest.skip("no make on this host")
    with _lock:
        r = subprocess.run(["make", "-s", "--no-print-directory", "build/unit/" + name], cwd=REPO,
                           capture_output=True, text=True)
    assert r.returncode == 0, "building unit test %s failed:\n%s%s" % (name, r.stdout, r.stderr)
    return str(REPO / "build" / "unit" / name)


@pytest.mark.parametrize("name", UNITS)
def test_unit(name):
    r = subprocess.run([build(name)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and " 0 failed" in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]
