"""pytest set-up for zvisor's tests: every test that runs zvisor is skipped,
with one clear reason, while build/zvisor does not exist; tests marked
native_only (checks of the guests themselves) still run."""
import os
import resource
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zvtest  # noqa: E402

# Guests that die from SIGSEGV/SIGABRT should not write core files (and must
# not be slowed down by a core_pattern helper); both runs inherit this.
resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))

# The stubs platform's cache of each file's windows: one directory for the
# whole run, empty at its start, so that the suite runs each program cold
# once and warm afterwards, and never touches the user's own cache.
import tempfile  # noqa: E402
_CACHE = tempfile.TemporaryDirectory(prefix="zvisor-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE.name


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "native_only: runs without zvisor (checks the guests and the test set-up)")


def pytest_collection_modifyitems(config, items):
    if zvtest.zvisor_available():
        return
    skip = pytest.mark.skip(reason="%s does not exist yet: run `make` first" % zvtest.ZVISOR)
    for item in items:
        if "native_only" not in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    return "zvisor: %s (%s)" % (
        zvtest.ZVISOR, "present" if zvtest.zvisor_available() else "MISSING: zvisor tests skipped")
