"""gdb inside zvisor: gdb -batch scripts (tests/gdb/*.gdb) debugging
tests/guests/gdbprog natively and as `zvisor run -- gdb ...` on every
platform, equal after normalising what differs between two runs of gdb
(addresses, pids and thread ids, the width of the columns holding them). gdb and its inferior are both guests:
the inferior's ptrace is the emulated one (docs/DESIGN.md, the guest's
ptrace)."""
import re
import shutil
from pathlib import Path

import pytest

from guestdesc import built, cpu_has, get
from zvtest import PLATFORMS, compare, run, run_zv

GDB_DIR = Path(__file__).resolve().parent / "gdb"

# script -> lines its native run must show (so that two failures never pass)
SCRIPTS = {
    "break": ["Breakpoint 1, f (x=0) at gdbprog.c:", "Value returned is $1 = 0", "s=21",
              "exited normally"],
    "crash": ["Program received signal SIGSEGV, Segmentation fault.", " in main (argc=2", "$1 = 11"],
    "watch": ["Hardware watchpoint 2: watched", "New value = 10", "watched 20"],
    "forkchild": ["hit Breakpoint 1, g (x=3)", "$1 = 3", "child 45"],
    "registers": ["rip ", "$1 = 1", "eflags"],
    "threads": ["hit Breakpoint 1, g (x=7)", "* 2    Thread", "killed]"],
    "catchexec": ["(forked process ", "is executing new program: /usr/bin/echo", "exe = '/usr/bin/echo'",
                  "exec'd"],
    "rerun": ["Breakpoint 1, g (x=6) at gdbprog.c:", "#0  g (x=6) at gdbprog.c:", "s=21", "exited normally"],
    "signal": ["on_usr1 (sig=...) at gdbprog.c:", "#1  <signal handler called>",
               "Single stepping until exit from function __restore_rt", "got 10"],
}


def normalize(text):
    text = re.sub(r"0x[0-9a-f]+", "ADDR", text)
    text = re.sub(r"\b(process|LWP|expected=)( ?)[0-9]+", r"\1\2N", text)
    text = re.sub(r"\b[0-9]{6,}\b", "NUM", text)  # register values in decimal
    return re.sub(r" {2,}", " ", text)  # columns as wide as the ids in them


def expect(lines):
    def check(res):
        for line in lines:
            assert line in res.stdout, "native gdb did not print %r:\n%s" % (line, res.stdout)
    return check


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("build", get("gdbprog").builds())
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_gdb_script(script, build, platform, request):
    assert shutil.which("gdb"), "gdb is not installed (scripts/install-deps.sh installs it)"
    if script == "crash" and platform.startswith("zpoline") and not cpu_has("pku"):
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=(
            "zpoline maps page 0, readable without protection keys (no 'pku' in /proc/cpuinfo): "
            "the program's NULL read does not fault")))
    argv = ["gdb", "-batch", "-nx", "-x", str(GDB_DIR / (script + ".gdb")), str(built(build))]
    compare(argv, platform, normalize=normalize, normalize_stderr=normalize, expect_native=expect(SCRIPTS[script]),
            timeout=120)


def mapped_files(text):
    """The paths `info proc mappings` shows, as a set."""
    return {l.split()[-1] for l in text.splitlines() if re.match(r"^\s+0x[0-9a-f]+\s+0x", l) and "/" in l.split()[-1]}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gdb_mappings(platform):
    """A tracee's /proc/PID/maps, read by its tracer, is the program's view
    of itself: its files, none of zvisor's (the layout of anonymous memory
    may differ, as it does between kernels)."""
    argv = ["gdb", "-batch", "-nx", "-ex", "break main", "-ex", "run", "-ex", "info proc mappings",
            str(built("gdbprog"))]
    native = run(argv, timeout=120)
    zv = run_zv(argv, platform, timeout=120)
    want, got = mapped_files(native.stdout), mapped_files(zv.stdout)
    assert any("libc.so" in p for p in want), native.stdout
    assert got == want, zv.stdout
