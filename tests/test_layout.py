"""The guest's address space as natively, without randomisation (setarch -R,
as gdb runs its inferiors): zvisor's stub regions lie above the mmap area's
top, where the host places none of the guest's mappings, and the vDSO moves
below the interpreter, where the host's execve puts it (docs/DESIGN.md,
"Jump stubs and SUD off", "The vDSO and virtual time"). tests/guests/layout.c
prints what it sees; gdb's backtrace addresses are checked too."""
import re
import shutil

import pytest

from guestdesc import built, get
from zvtest import PLATFORMS, TEST_USER, assert_same, run, zv_argv

NORAND = ["setarch", "-R"]


def norand_compare(argv, platform, normalize=None, timeout=60):
    native = run(NORAND + [str(a) for a in argv], user=TEST_USER, timeout=timeout)
    assert native.returncode == 0, native.stdout + native.stderr
    if TEST_USER and platform.startswith("zpoline"):
        pytest.skip("the zpoline platform needs root to map page 0, not %s" % TEST_USER)
    zv = run(NORAND + zv_argv(argv, platform), user=TEST_USER, timeout=timeout)
    if normalize:
        native = native._replace(stdout=normalize(native.stdout), stderr=normalize(native.stderr))
        zv = zv._replace(stdout=normalize(zv.stdout), stderr=normalize(zv.stderr))
    assert_same(native, zv, "command: setarch -R " + " ".join(map(str, argv)) + " (platform %s)" % platform)
    return native


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["", "exec", "vfork"])
@pytest.mark.parametrize("build", get("layout").builds())
def test_layout_as_native(build, mode, platform, request):
    if build.endswith(".static"):
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=(
            "the break is a fixed anonymous mapping right after the .bss pages, which the host "
            "merges with them: maps shows one [heap] line where native has two")))
    native = norand_compare([built(build)] + ([mode] if mode else []), platform)
    assert "AT_SYSINFO_EHDR 0x" in native.stdout and "[stack]" in native.stdout


def gdb_normalize(text):
    return re.sub(r"\b(process|LWP)( ?)[0-9]+", r"\1\2N", text)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gdb_backtrace_addresses(platform):
    """gdb disables randomisation: the addresses of a backtrace stopped in
    libc's write, and of the threads' stacks, are the native ones."""
    assert shutil.which("gdb"), "gdb is not installed (scripts/install-deps.sh installs it)"
    argv = ["gdb", "-batch", "-nx", "-ex", "catch syscall write", "-ex", "run", "-ex", "bt",
            "-ex", "info sharedlibrary", "-ex", "kill", str(built("layout"))]
    native = norand_compare(argv, platform, normalize=gdb_normalize, timeout=120)
    assert re.search(r"0x[0-9a-f]+ in \S*write", native.stdout), native.stdout
    assert "[New Thread 0x" in native.stdout, native.stdout
