"""Real programs on the default platform (jump stubs, DESIGN section 12)
take no SIGSYS: every `syscall` they run was turned into a stub when its
code was mapped. `--stats` prints, per process, how its calls arrived:
`sigsys=N` counts the calls that took the SIGSYS catch-all (a bounce, a
fast call finished on the SIGSYS path for its frame, is counted apart).

Each program runs natively and under zvisor with --stats; the output must be
the same and the SIGSYS count of every process at most the allowance given
with its reason (0 unless a reason is given)."""
import os
import re
import shutil
import struct

import pytest

from zvtest import assert_same, guest, run, run_native, run_zv

STATS = re.compile(r"^zvisor: stats: pid=\d+ fast=(\d+) sigsys=(\d+) bounced=(\d+) rewritten=(\d+)$", re.M)


def built(name):
    path = guest(name)
    assert os.path.exists(path), "guest %s is not built: run `make -C tests/guests`" % name
    return path


def stats(stderr):
    """[(fast, sigsys, bounced, rewritten)] of every process."""
    found = [tuple(map(int, m.groups())) for m in STATS.finditer(stderr)]
    assert found, "no --stats line:\n" + stderr[-3000:]
    return found


def strip_stats(stderr):
    return "".join(l for l in stderr.splitlines(keepends=True) if not l.startswith("zvisor: stats:"))


def run_both(argv, cwd=None, normalize=lambda s: s):
    """argv natively and on the stubs platform with --stats: the same output;
    returns the stats of every process."""
    native = run_native(argv, cwd=cwd)
    zv = run_zv(argv, "stubs", ["--stats"], cwd=cwd)
    found = stats(zv.stderr)
    n = native._replace(stdout=normalize(native.stdout), stderr=normalize(native.stderr))
    z = zv._replace(stdout=normalize(zv.stdout), stderr=normalize(strip_stats(zv.stderr)))
    assert_same(n, z, "command: " + " ".join(map(str, argv)))
    return found


def sigsys(found):
    return [s[1] for s in found]


# --- Go: function bounds from the pclntab -------------------------------------

GO_PARTS = ["chan", "exec", "preempt", "signal", "files", "nil", "chroot"]


@pytest.mark.parametrize("part", GO_PARTS)
def test_go_stripped_no_sigsys(part):
    """A Go binary without its symbol table (-ldflags=-s) gets its function
    bounds from Go's own table: as many stubs and as few SIGSYS as the
    unstripped build (none), the same output as natively."""
    full = run_both([built("goguest"), part])
    stripped = run_both([built("goguest.stripped"), part])
    assert sorted(sigsys(stripped)) == sorted(sigsys(full)), (full, stripped)
    assert sigsys(stripped)[-1] == 0, stripped  # the Go process, which ends last
    assert stripped[0][3] == full[0][3] > 0, "stubs made: %s vs %s" % (stripped, full)


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
    found = run_both([path, "files"])
    assert max(sigsys(found)) == 0 and found[0][3] > 0, found


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
