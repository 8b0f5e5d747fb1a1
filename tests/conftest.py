"""pytest set-up for zvisor's tests: every test that runs zvisor is skipped,
with one clear reason, while build/zvisor does not exist; tests marked
native_only (checks of the guests themselves) still run.

With ZV_TEST_USER=NAME (make check-rootless) the differential runs are made
as that user (zvtest.run_native, run_zv): here tmp_path becomes a directory
of that user, zvisor and the guests are copied where the user can run them
if it cannot reach them in place, PATH keeps only what the user can search,
and the pass refuses to run on a host
whose vm.mmap_min_addr was lowered (the user could then map page 0)."""
import gzip
import os
import resource
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zvtest  # noqa: E402

# Guests that die from SIGSEGV/SIGABRT should not write core files (and must
# not be slowed down by a core_pattern helper); both runs inherit this.
resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))

# A runner may start the suite with signals ignored (nohup ignores SIGHUP, a
# shell's `&` SIGINT and SIGQUIT), and every guest would inherit them, natively
# and under zvisor: guests that expect the default action (loadstorm's
# timer-term, the signals guest's list of ignored signals) would then fail.
# The suite starts from the default dispositions (SIGPIPE is Python's own and
# subprocess resets it in each child).
import signal  # noqa: E402
for _sig in signal.valid_signals():
    if _sig not in (signal.SIGPIPE, signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT else signal.SIG_DFL)

# The stubs platform's cache of each file's windows: one directory for the
# whole run, empty at its start, so that the suite runs each program cold
# once and warm afterwards, and never touches the user's own cache.
import tempfile  # noqa: E402
_CACHE = tempfile.TemporaryDirectory(prefix="zvisor-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE.name
# --fake-root's default database goes there too, never into the user's home.
os.environ["XDG_STATE_HOME"] = _CACHE.name


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "native_only: runs without zvisor (checks the guests and the test set-up)")
    if zvtest.TEST_USER:
        _rootless_configure(config)


# --- ZV_TEST_USER: the rootless pass --------------------------------------------

def mmap_min_addr():
    with open("/proc/sys/vm/mmap_min_addr") as f:
        return int(f.read())


def kernel_default_mmap_min_addr():
    """CONFIG_DEFAULT_MMAP_MIN_ADDR of the running kernel, when its config
    is readable; else 65536, what distributions set."""
    for path, opener in (("/boot/config-" + os.uname().release, open),
                         ("/proc/config.gz", gzip.open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_DEFAULT_MMAP_MIN_ADDR="):
                        return int(line.split("=", 1)[1])
        except OSError:
            pass
    return 65536


def _rootless_configure(config):
    user = zvtest.TEST_USER
    try:
        uid, gid = zvtest.user_ids(user)
    except KeyError:
        pytest.exit("ZV_TEST_USER=%s: no such user" % user, returncode=4)
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.exit("ZV_TEST_USER=%s needs root and setpriv (util-linux) to run commands as %s"
                    % (user, user), returncode=4)
    if uid == 0:
        pytest.exit("ZV_TEST_USER=%s is root: name an ordinary user" % user, returncode=4)
    # Read only: the guard is the host's, and the pass is about its default.
    now, default = mmap_min_addr(), kernel_default_mmap_min_addr()
    if now < default or now == 0:
        pytest.exit("vm.mmap_min_addr is %d (this kernel's default: %d): %s may map low pages, "
                    "so this is not the rootless case; restore the default" % (now, default, user),
                    returncode=4)
    config._zv_rootless = (user, uid, gid, now, default)
    _reachable_binaries(user)
    _reachable_path(user)


def _reachable_binaries(user):
    """Point zvtest at copies of zvisor and the guests (the build directory's
    files, not the Go caches) when the user cannot run them in place, e.g.
    under /root. Test modules import GUEST_DIR later, at collection."""
    probe = zvtest.run(["test", "-x", str(zvtest.ZVISOR), "-a", "-r", str(zvtest.GUEST_DIR / "hello")],
                       user=user)
    if probe.returncode == 0 or not zvtest.zvisor_available():
        return
    area = Path(zvtest.user_area(user))
    (area / "bin").mkdir()
    shutil.copy2(zvtest.ZVISOR, area / "bin" / "zvisor")
    guests = area / "guests"
    guests.mkdir()
    if zvtest.GUEST_DIR.is_dir():
        for f in zvtest.GUEST_DIR.iterdir():
            if f.is_file() or f.is_symlink():
                shutil.copy2(f, guests / f.name, follow_symlinks=False)
    zvtest.ZVISOR = area / "bin" / "zvisor"
    zvtest.GUEST_DIR = guests


def _reachable_path(user):
    """PATH without the directories the user cannot search (root's own, such
    as ~/.pyenv/shims), so that programs the tests look up (shutil.which)
    are ones the user can run."""
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    res = zvtest.run(["sh", "-c", 'for d; do [ -x "$d" ] && echo "$d"; done', "sh"] + dirs, user=user)
    os.environ["PATH"] = os.pathsep.join(res.stdout.splitlines())


if zvtest.TEST_USER:
    @pytest.fixture
    def tmp_path():
        """The test's scratch directory, the test user's: what the test
        makes in it as root is handed to the user before each run."""
        d = zvtest.user_tmp(zvtest.TEST_USER)
        zvtest.user_trees.append(d)
        yield Path(d)
        zvtest.user_trees.remove(d)


def _deselect_platforms(config, items):
    """ZV_TEST_PLATFORMS: drop the tests whose `platform` parameter is
    another platform."""
    if zvtest.SELECTED_PLATFORMS == zvtest.PLATFORMS:
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        other = params.get("platform") not in [None] + zvtest.SELECTED_PLATFORMS
        (drop if other else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_sessionfinish(session, exitstatus):
    rootless = getattr(session.config, "_zv_rootless", None)
    if rootless and mmap_min_addr() != rootless[3]:
        sys.stderr.write("vm.mmap_min_addr changed during the rootless pass: %d, now %d\n"
                         % (rootless[3], mmap_min_addr()))
        session.exitstatus = 1


def pytest_collection_modifyitems(config, items):
    _deselect_platforms(config, items)
    if zvtest.zvisor_available():
        return
    skip = pytest.mark.skip(reason="%s does not exist yet: run `make` first" % zvtest.ZVISOR)
    for item in items:
        if "native_only" not in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    lines = ["zvisor: %s (%s)" % (
        zvtest.ZVISOR, "present" if zvtest.zvisor_available() else "MISSING: zvisor tests skipped")]
    if zvtest.SELECTED_PLATFORMS != zvtest.PLATFORMS:
        lines.append("platforms: %s (ZV_TEST_PLATFORMS)" % ", ".join(zvtest.SELECTED_PLATFORMS))
    rootless = getattr(config, "_zv_rootless", None)
    if rootless:
        lines.append("native and zvisor runs as %s (uid %d, gid %d); vm.mmap_min_addr=%d "
                     "(kernel default %d)" % rootless)
    return lines
