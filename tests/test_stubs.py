"""The default platform, jump stubs (DESIGN "Jump stubs and SUD off"), for an ordinary
user: no privilege and no sysctl, page 0 never mapped, and the same
behaviour as root. Run as `nobody` through setpriv (CI runs as root)."""
import os
import re
import shutil

import pytest

from zvtest import ZVISOR, assert_same, guest, run

needs_setpriv = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root and setpriv to drop to the user nobody")


def built(name):
    path = guest(name)
    assert os.path.exists(path), "guest %s is not built: run `make -C tests/guests`" % name
    return str(path)


def as_nobody(argv):
    return run(argv, cwd="/", user="nobody")


def stats(stderr):
    m = re.search(r"fast=(\d+) sigsys=(\d+) bounced=(\d+) rewritten=(\d+)", stderr)
    assert m, stderr
    return tuple(map(int, m.groups()))


@needs_setpriv
@pytest.mark.parametrize("name", ["nullpage", "nullpage.static", "nullpage.musl"])
@pytest.mark.parametrize("case", ["nullread", "nullwrite", "nullcall"])
def test_null_as_nobody(name, case):
    """As an ordinary user on the default platform, NULL reads, writes and
    calls die from SIGSEGV as natively, after a rewritten site worked."""
    native = as_nobody([built(name), case])
    zv = as_nobody([ZVISOR, "run", "--", built(name), case])
    assert native.returncode == -11, native
    assert_same(native, zv, "%s %s as nobody" % (name, case))


@needs_setpriv
@pytest.mark.parametrize("name", ["hello", "hello.static", "hello.musl", "goguest"])
def test_fast_path_as_nobody(name):
    """The fast path needs no privilege: as nobody, as as root, the
    program's calls go through stubs (few SIGSYS), with the same output."""
    argv = [built(name)] + (["files"] if name == "goguest" else [])
    runs = {}
    for who, runner in (("nobody", as_nobody), ("root", lambda a: run(a, cwd="/"))):
        res = runner([ZVISOR, "run", "--stats", "--"] + argv)
        runs[who] = res
        fast, sigsys, bounced, rewritten = stats(res.stderr)
        assert rewritten > 0 and fast > sigsys, (who, res.stderr)
    strip = lambda s: re.sub(r"zvisor: stats: .*\n", "", s)
    assert strip(runs["nobody"].stdout) == strip(runs["root"].stdout)
    assert runs["nobody"].returncode == runs["root"].returncode


@needs_setpriv
def test_zpoline_falls_back_as_nobody():
    """--platform=zpoline without the right to map page 0 says so once and
    runs on the stubs platform (unless the host allows page 0 to all)."""
    with open("/proc/sys/vm/mmap_min_addr") as f:
        if int(f.read()) == 0:
            pytest.skip("vm.mmap_min_addr is 0 on this host: anyone may map page 0")
    res = as_nobody([ZVISOR, "run", "--platform=zpoline", "--", built("hello")])
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("using the stubs platform") == 1, res.stderr
    # the images it execs fall back too, silently: their stderr is the guest's
    res = as_nobody([ZVISOR, "run", "--platform=zpoline", "--", "/bin/sh", "-c", "/bin/true; /bin/true"])
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("using the stubs platform") == 1, res.stderr


def test_zpoline_exec_into_user_namespace_is_silent():
    """An image exec'd in a new user namespace has no CAP_SYS_RAWIO there,
    so it cannot map page 0 and runs on the stubs platform, without a word
    on the guest's stderr (Go's TestCloneNEWUSERAndRemap compares it)."""
    with open("/proc/sys/vm/mmap_min_addr") as f:
        if int(f.read()) == 0:
            pytest.skip("vm.mmap_min_addr is 0 on this host: anyone may map page 0")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root (page 0 in the first image) and unshare")
    if run(["unshare", "-U", "/bin/true"]).returncode != 0:
        pytest.skip("user namespaces are not available here")
    res = run([ZVISOR, "run", "--platform=zpoline", "--", "unshare", "-U", "/bin/sh", "-c", "echo in"])
    assert (res.returncode, res.stdout, res.stderr) == (0, "in\n", ""), res.stderr


def test_page0_unmapped_by_default():
    """The default platform never maps page 0: the guest sees no mapping at
    address 0 in /proc/self/maps."""
    res = run([ZVISOR, "run", "--", "/bin/cat", "/proc/self/maps"])
    assert res.returncode == 0, res.stderr
    assert not any(line.startswith("00000000-") for line in res.stdout.splitlines()), res.stdout


@needs_setpriv
def test_run_as_user_has_a_home():
    """zvtest.run(user=) (ZV_TEST_USER, make check-rootless) runs as that
    user, in a HOME and with an XDG_CACHE_HOME that it can write."""
    res = run(["sh", "-c", 'id -u; touch "$HOME/f" "$XDG_CACHE_HOME/f" && pwd'], user="nobody")
    assert res.returncode == 0, res.stderr
    uid, cwd = res.stdout.split()
    assert uid == "65534" and cwd.endswith("/home"), res.stdout
