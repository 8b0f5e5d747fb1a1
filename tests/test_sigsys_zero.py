"""Real programs on the default platform (DESIGN "Jump stubs and SUD off")
take no SIGSYS: every `syscall` they run was turned into a stub when its
code was mapped. `--stats` prints, per process, how its calls arrived:
`sigsys=N` counts the calls that took the SIGSYS catch-all (a bounce, a
fast call finished on the SIGSYS path for its frame, is counted apart).

Each program runs natively and under zvisor with --stats and --count; the
output must be the same and every process's SIGSYS count must be its count
of rt_sigreturn calls that came by SIGSYS (`restorers=N`): a signal
restorer (`mov $15, %rax; syscall`) is left on SIGSYS on purpose (DESIGN
"Jump stubs and SUD off": unwinders recognise it by its bytes, and the call needs the
full frame, so a stub would bounce to SIGSYS anyway). Every other call takes
a stub. (Each process counts its own: the run's --count table misses a
Go child's restorer now and then.)"""
import os
import re
import shutil
import struct
import sys

import pytest

from zvtest import assert_same, guest, parse_count_table, run, run_native, run_zv

# the system python3, which an ordinary user can read (the rootless pass)
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else os.path.realpath(sys.executable)

STATS = re.compile(r"^zvisor: stats: pid=\d+ fast=(\d+) sigsys=(\d+) bounced=(\d+) rewritten=(\d+)(?: \w+=\d+)*$", re.M)


def built(name):
    path = guest(name)
    assert os.path.exists(path), "guest %s is not built: run `make -C tests/guests`" % name
    return path


RESTORERS = re.compile(r" restorers=(\d+)")


def stats(stderr):
    """[(fast, sigsys, bounced, rewritten, restorers)] of every process."""
    found = [tuple(map(int, m.groups())) + (int(RESTORERS.search(m.group(0)).group(1)),)
             for m in STATS.finditer(stderr)]
    assert found, "no --stats line:\n" + stderr[-3000:]
    return found


def strip_stats(stderr):
    return "".join(l for l in stderr.splitlines(keepends=True) if not l.startswith("zvisor: stats:"))


COUNT_HEADER = re.compile(r"^ +calls +errors +syscall *$", re.M)


def run_both(argv, cwd=None, opts=()):
    """argv natively and on the stubs platform with --stats and --count: the
    same output; returns the stats of every process and the number of
    rt_sigreturn calls."""
    native = run_native(argv, cwd=cwd)
    zv = run_zv(argv, "stubs", ["--stats", "--count"] + list(opts), cwd=cwd)
    found = stats(zv.stderr)
    sigreturns = parse_count_table(zv.stderr).get("rt_sigreturn", (0, 0))[0]
    err = strip_stats(zv.stderr)
    m = COUNT_HEADER.search(err)
    assert m, err
    z = zv._replace(stderr=err[:m.start()])
    assert_same(native, z, "command: " + " ".join(map(str, argv)))
    return found, sigreturns


def assert_no_sigsys(found, sigreturns, what=""):
    """No SIGSYS but the signal restorers' (see above), in any process."""
    del sigreturns  # the run's table: see the module's docstring
    other = [s[1] - s[4] for s in found]
    assert not any(other), "%s: SIGSYS other than restorers' per process %s (SIGSYS %s)" % (
        what, other, sigsys(found))


def sigsys(found):
    return [s[1] for s in found]


# --- Go: function bounds from the pclntab -------------------------------------

GO_PARTS = ["chan", "exec", "preempt", "signal", "files", "nil", "chroot"]


@pytest.mark.parametrize("part", GO_PARTS)
def test_go_stripped_no_sigsys(part):
    """A Go binary without its symbol table (-ldflags=-s) gets its function
    bounds from Go's own table: as many stubs and as few SIGSYS as the
    unstripped build (none), the same output as natively."""
    full, full_sigreturns = run_both([built("goguest"), part])
    stripped, sigreturns = run_both([built("goguest.stripped"), part])
    assert_no_sigsys(full, full_sigreturns, "unstripped")
    assert_no_sigsys(stripped, sigreturns, "stripped")
    assert stripped[-1][3] == full[-1][3] > 0, "stubs made: %s vs %s" % (stripped, full)


def copy_with(tmp_path, name, edit):
    """A copy of the stripped Go guest changed by edit(bytearray)."""
    data = bytearray(open(built("goguest.stripped"), "rb").read())
    edit(data)
    path = tmp_path / name
    path.write_bytes(bytes(data))
    path.chmod(0o755)
    return str(path)


def sections(data):
    """{name: (header offset, file offset, size)} of an ELF file's sections."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3c)
    names_off = struct.unpack_from("<Q", data, shoff + 64 * shstrndx + 0x18)[0]
    out = {}
    for i in range(shnum):
        h = shoff + 64 * i
        name, = struct.unpack_from("<I", data, h)
        off, size = struct.unpack_from("<QQ", data, h + 0x18)
        end = data.index(b"\0", names_off + name)
        out[data[names_off + name:end].decode()] = (h, off, size)
    return out


def no_section_headers(data):
    struct.pack_into("<Q", data, 0x28, 0)           # e_shoff
    struct.pack_into("<HHH", data, 0x3a, 0, 0, 0)   # e_shentsize, e_shnum, e_shstrndx


def test_go_without_section_headers(tmp_path):
    """Without section headers the table is found by its magic and checked
    against the runtime's moduledata: still no SIGSYS."""
    path = copy_with(tmp_path, "go.noshdr", no_section_headers)
    found, sigreturns = run_both([path, "files"])
    assert_no_sigsys(found, sigreturns)
    assert found[0][3] > 0, found


def section_edit(field_off, value, fmt="<Q"):
    """An edit of the .gopclntab section header (what the Go runtime never
    reads): field at field_off in the header (0x18 offset, 0x20 size)."""
    def edit(data):
        h, _, _ = sections(data)[".gopclntab"]
        struct.pack_into(fmt, data, h + field_off, value)
    return edit


def table_edit(at, value, fmt="<Q"):
    """An edit of the pclntab header itself at offset at: the Go runtime
    checks it and dies; zvisor must die the same way, not crash."""
    def edit(data):
        _, off, _ = sections(data)[".gopclntab"]
        struct.pack_into(fmt, data, off + at, value)
    return edit


DAMAGE = {
    "section-beyond-eof": section_edit(0x18, 1 << 40),
    "section-huge-size": section_edit(0x20, (1 << 63) + 5),
    "section-at-elf-header": section_edit(0x18, 0),
    "section-names-beyond-eof": lambda d: struct.pack_into("<H", d, 0x3e, 0),
    "nfunc-huge": table_edit(8, (1 << 62)),
    "pcln-offset-beyond": table_edit(64, (1 << 40)),
    "functab-unsorted": lambda d: unsort_functab(d),
}


def unsort_functab(data):
    """The 6th function's entry far beyond the 7th's."""
    _, off, _ = sections(data)[".gopclntab"]
    pcln, = struct.unpack_from("<Q", data, off + 64)
    struct.pack_into("<I", data, off + pcln + 8 * 5, 0xffffff)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_go_damaged_table(tmp_path, damage):
    """A damaged function table or section header gives no bounds: the
    program runs (or dies) as natively, its calls on the SIGSYS path."""
    path = copy_with(tmp_path, "go." + damage, DAMAGE[damage])
    native = run_native([path, "files"])
    zv = run_zv([path, "files"], "stubs", ["--stats"])
    # a runtime that dies prints its stack addresses, which differ per run
    first = lambda r: (r.returncode, r.stdout, strip_stats(r.stderr).split("\n", 1)[0])
    assert first(native) == first(zv), (native, zv)
    assert "zvisor: stats:" in zv.stderr, zv.stderr


# --- real programs ----------------------------------------------------------------

def tool(name):
    path = shutil.which(name)
    if not path:
        pytest.skip("%s is not installed" % name)
    return path


@pytest.fixture
def small_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    for argv in (["init", "-q", "."], ["add", "a"], ["commit", "-qm", "one"]):
        if argv[0] == "add":
            (repo / "a").write_text("a\n")
        assert run([tool("git")] + argv, cwd=str(repo), env=env).returncode == 0
    (repo / "b").write_text("untracked\n")
    return str(repo)


SCRIPT = """import json, os, subprocess, sys
data = json.dumps({"pid": 0, "cwd": os.getcwd() != ""})
print(data, subprocess.run(["true"]).returncode, sys.version_info[:2] >= (3, 0))
"""

# name: (argv builder taking tmp_path and the repo, allowance, why)
PROGRAMS = {
    "python3-pass": lambda t, r: [PYTHON, "-c", "pass"],
    "python3-script": lambda t, r: [PYTHON, "-c", SCRIPT],
    "gcc": lambda t, r: [tool("gcc"), "-c", "-o", str(t / "x.o"), write(t / "x.c", "int f(int x) { return x + 1; }\n")],
    "git-status": lambda t, r: [tool("git"), "-C", r, "status", "--short"],
    "sqlite3": lambda t, r: [tool("sqlite3"), ":memory:",
                             "create table t(x); insert into t values (1), (2); select sum(x) from t;"],
    "busybox-static": lambda t, r: [static_busybox(), "sh", "-c", "echo hi; ls / > /dev/null; cat /proc/self/comm"],
    "musl-static": lambda t, r: [built("threads.musl")],
    "go-static": lambda t, r: [built("goguest"), "files"],
    "go-static-stripped": lambda t, r: [built("goguest.stripped"), "chan"],
}


def write(path, text):
    path.write_text(text)
    return str(path)


def static_busybox():
    path = tool("busybox")
    if b"\0/lib64/ld-linux" in open(path, "rb").read(4096):
        pytest.skip("busybox is not the static build")
    return path


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_real_program_no_sigsys(name, tmp_path, small_repo):
    """The program's processes take no SIGSYS on the stubs platform but
    their signal restorers' (start-up included: the dynamic loader's own
    reads too), with the output they have natively. Without trampolines in
    padding (bench/results/fast-path.md) python3 -c pass takes 25, gcc -c
    36, git status 47, sqlite3 10, busybox 1."""
    argv = PROGRAMS[name](tmp_path, small_repo)
    for opts in (["--no-cache"], []):  # windows found by decoding, then from the cache
        found, sigreturns = run_both(argv, cwd=str(tmp_path), opts=opts)
        assert_no_sigsys(found, sigreturns, " ".join(opts))
        assert all(f[3] > 0 for f in found), "no stubs made: %s" % found


# --- a syscall with no window: the trampoline -------------------------------------

from guestdesc import builds, compare_guest  # noqa: E402
from zvtest import PLATFORMS  # noqa: E402

TRAMP = builds("tramp")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", TRAMP)
def test_trampoline_guest(name, platform):
    """`mov %edi, %eax; syscall` at a function's start has no 5-byte window:
    on stubs it goes through a trampoline in the padding after the `ret`.
    Its calls are right, a 50 us timer never shows a handler the padding,
    and a handler that moves rip onto the syscall gets the call made there
    (the lines in tramp.desc)."""
    compare_guest(name, platform)


@pytest.mark.parametrize("name", TRAMP)
def test_trampoline_is_used(name):
    """On stubs the site's bytes are the jmp rel8 to the trampoline (eb),
    made at load, and its 100,000 calls are fast."""
    assert run_native([built(name), "bytes"]).stdout == "site byte 0f\n"
    assert run_zv([built(name), "bytes"], "stubs").stdout == "site byte eb\n"
