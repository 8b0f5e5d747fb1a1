"""Rewritten code shared across processes (intercept/sharedtext.c): a warm
run maps the cached, already rewritten copy of a library's code instead of
copying its pages; the guest still sees the original file (maps, smaps,
numa_maps), a stale original or a damaged copy is never used, the region's
place taken falls back to private pages, the directory stays within its
bound, and a checkpoint does not need the copy."""
import os
import re
import struct
import subprocess
import time
from pathlib import Path

import pytest

import crharness as cr
import zvtest
from test_sitecache import built, entries, rewritten, without_stats, zv
from zvtest import ZVISOR, run

MASK = (1 << 64) - 1
HEAD = 4096
WINDOW = 56  # struct zv_stub_window


def copies(cache):
    return [e for e in entries(cache) if e.name.endswith(".pgs")]


def env_for(cache, **extra):
    return dict(os.environ, XDG_CACHE_HOME=str(cache), **extra)


def host_maps(pid, name="smaps"):
    return Path("/proc/%d/%s" % (pid, name)).read_text()


def sleeping(cache, secs="5", **extra):
    """`zvisor run -- /bin/sleep secs` started, once its image is loaded."""
    p = subprocess.Popen([str(ZVISOR), "run", "--", "/bin/sleep", secs], env=env_for(cache, **extra))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "/usr/bin/sleep" not in host_maps(p.pid, "maps") \
            and "/bin/sleep" not in host_maps(p.pid, "maps"):
        time.sleep(0.05)
    time.sleep(0.3)  # past ld.so's mappings
    return p


def code_lines(smaps, pattern):
    """{path: (header, fields)} of the executable mappings whose path matches."""
    out = {}
    for block in re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", smaps):
        head = block.split("\n", 1)[0].split()
        if len(head) >= 6 and head[1] == "r-xp" and re.search(pattern, head[5]):
            fields = dict(re.findall(r"^(\w+):\s+(\d+) kB", block, re.M))
            out[head[5]] = (head, fields)
    return out


def test_warm_run_shares_libc_text(tmp_path):
    """Warm: libc's and ld.so's code are mappings of the copies, with no
    anonymous page (cold: the windows' pages are copied)."""
    run([str(ZVISOR), "run", "--", "/bin/true"], env=env_for(tmp_path))
    assert len(copies(tmp_path)) >= 2, entries(tmp_path)
    p = sleeping(tmp_path)
    try:
        lines = code_lines(host_maps(p.pid), r"\.pgs$")
    finally:
        p.kill()
        p.wait()
    assert len(lines) >= 2, lines
    for path, (head, fields) in lines.items():
        assert fields["Anonymous"] == "0", (path, fields)
    cold = tmp_path / "cold"
    p = sleeping(cold, ZVISOR_CACHE_MAX="0")
    try:
        lines = code_lines(host_maps(p.pid), r"libc\.so")
    finally:
        p.kill()
        p.wait()
    assert [int(f["Anonymous"]) for _, f in lines.values()][0] > 0, lines


def test_guest_sees_the_original(tmp_path):
    """/proc/self/maps, smaps and numa_maps name libc and ld.so with their
    own device, inode and path, the columns of a native run."""
    run([str(ZVISOR), "run", "--", "/bin/true"], env=env_for(tmp_path))
    for name in ("maps", "smaps", "numa_maps"):
        native = run(["/bin/cat", "/proc/self/" + name])
        under = run([str(ZVISOR), "run", "--", "/bin/cat", "/proc/self/" + name], env=env_for(tmp_path))
        assert ".pgs" not in under.stdout, under.stdout

        def cols(text):
            rows = [l.split()[1:] for l in text.splitlines() if re.search(r"libc\.so|ld-linux", l)]
            if name == "numa_maps":
                return [r[:2] for r in rows]  # policy, file= (counts differ natively)
            return rows

        assert cols(under.stdout) == cols(native.stdout), name


LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
SHOW_LIBC = 'print("".join(l for l in open("/proc/self/maps") if "libc.so" in l), end="")'


def libc_lines(text):
    return [l.split(None, 1)[1] for l in text.splitlines()]


@pytest.mark.skipif(not os.path.exists(LIBC), reason="needs Debian's libc path")
def test_guest_sees_its_own_name_and_deletion(tmp_path):
    """The copy was stored by a process that reached libc by its usual path;
    a process that reaches the same file by a hard link sees that name, and
    one whose library was removed sees " (deleted)", as natively."""
    cache = tmp_path / "c"
    lib = tmp_path / "lib"
    lib.mkdir()
    env = env_for(cache, LD_LIBRARY_PATH=str(lib))

    def linked():
        # a link changes libc's ctime, so the copy is stored again after it,
        # by a run that names libc by its usual path
        try:
            os.link(LIBC, lib / "libc.so.6")
        except OSError:
            pytest.skip("cannot hard-link libc here")
        run([str(ZVISOR), "run", "--", "/bin/true"], env=env_for(cache))
        return set(copies(cache))

    def under(code):
        before = linked()
        res = run([str(ZVISOR), "run", "--", "python3", "-c", code], env=env)
        assert set(copies(cache)) == before, "the copy was not used"
        return res

    try:
        os.link(LIBC, lib / "libc.so.6")
        native = run(["python3", "-c", SHOW_LIBC], env=env)
        (lib / "libc.so.6").unlink()
        res = under(SHOW_LIBC)
        assert str(lib) in native.stdout
        assert libc_lines(res.stdout) == libc_lines(native.stdout), res.stdout
        (lib / "libc.so.6").unlink()
        gone = 'import os; os.unlink(%r); ' % str(lib / "libc.so.6") + SHOW_LIBC
        os.link(LIBC, lib / "libc.so.6")
        native = run(["python3", "-c", gone], env=env)
        res = under(gone)
        assert "(deleted)" in native.stdout
        assert libc_lines(res.stdout) == libc_lines(native.stdout), res.stdout
    finally:
        if (lib / "libc.so.6").exists():
            (lib / "libc.so.6").unlink()


def test_stale_original_is_not_used(tmp_path):
    """A program touched or replaced has a new identity: its old copy is
    not mapped, and the new program runs as natively."""
    prog = tmp_path / "prog"
    prog.write_bytes(Path(built("stubwin.static")).read_bytes())
    prog.chmod(0o755)
    cache = tmp_path / "c"
    first = zv([prog], cache)
    old = set(copies(cache))
    assert old and "win_kill returned the pid" in first.stdout, first
    os.utime(prog, None)
    again = zv([prog], cache)
    assert again.stdout == first.stdout and set(copies(cache)) > old, again.stderr
    prog.write_bytes(Path(built("hello.static")).read_bytes())
    native = run([prog])
    for _ in range(2):
        res = zv([prog], cache)
        assert (res.stdout, res.returncode) == (native.stdout, native.returncode)
        assert without_stats(res.stderr) == native.stderr


def trailer_at(data):
    """The offset of a copy's trailer: the page whose key's off + len is
    that offset."""
    for t in range(0, len(data) - HEAD + 1, 4096):
        off, length = struct.unpack_from("<QQ", data, t + 64)
        if off + length == t and data[t + 8:t + 16] != b"\0" * 8:
            return t
    raise AssertionError("no trailer")


def trailer_len(data, t):
    """HEAD, the windows and the pairs (struct trailer's nw, ninside)."""
    nw, ninside = struct.unpack_from("<QQ", data, t + 88)
    return HEAD + nw * WINDOW + ninside * 8


def stubs_at(data, t):
    """The offset of the stub region's bytes: the page after the trailer."""
    return t + (trailer_len(data, t) + 4095) // 4096 * 4096


def resum(data, t):
    """The trailer's sum again after a change (mix of sharedtext.c)."""
    body = bytearray(data[t:t + trailer_len(data, t)])
    struct.pack_into("<Q", body, 112, 0)
    h = 0x9e3779b97f4a7c15
    for (w,) in struct.iter_unpack("<Q", bytes(body[:len(body) // 8 * 8])):
        h = ((h ^ w) * 0xff51afd7ed558ccd) & MASK
        h ^= h >> 29
    struct.pack_into("<Q", body, 112, h)
    return data[:t] + bytes(body) + data[t + len(body):]


def the_copy(cache):
    (c,) = copies(cache)
    return c


VERDICT = 104  # struct trailer's verdict: sudoff's count, ~0 unknown


def verdict_of(copy):
    data = copy.read_bytes()
    return struct.unpack_from("<Q", data, trailer_at(data) + VERDICT)[0]


def test_copies_keep_the_count(tmp_path):
    """Every copy holds sudoff's count, also those stored by a process armed
    for good before it mapped the code (python3's own code has an unproven
    pair): a copy without it made every later process scan the whole
    mapping again (2 ms for libc). A copy without the count is replaced by
    the next run, silently, with one that has it."""
    zv(["/usr/bin/python3", "-c", "pass"], tmp_path)
    assert copies(tmp_path)
    for c in copies(tmp_path):
        assert verdict_of(c) != MASK, c
    cache = tmp_path / "one"
    argv = [built("stubwin.static")]
    zv(argv, cache)
    c = the_copy(cache)
    counted = verdict_of(c)
    data = bytearray(c.read_bytes())
    t = trailer_at(data)
    struct.pack_into("<Q", data, t + VERDICT, MASK)
    c.write_bytes(resum(bytes(data), t))
    res = zv(argv, cache)
    assert "zvisor:" not in without_stats(res.stderr), res.stderr
    assert verdict_of(the_copy(cache)) == counted


def test_damaged_copy_is_dropped_with_one_line(tmp_path):
    """Truncated, or a bad trailer: one line, the copy removed, the program
    right; the next run writes it again."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    c = the_copy(tmp_path)
    data = c.read_bytes()
    t = trailer_at(data)
    garbage = bytearray(data)
    garbage[t + 100] ^= 0xff
    for how in ("truncated", "garbage"):
        c = the_copy(tmp_path)
        if how == "truncated":
            c.write_bytes(data[:-8])
        else:
            c.write_bytes(bytes(garbage))
        res = zv(argv, tmp_path)
        assert (res.stdout, res.returncode) == (good.stdout, good.returncode), how
        lines = [l for l in res.stderr.splitlines() if "damaged cache file" in l]
        assert len(lines) == 1 and ".pgs" in lines[0], (how, res.stderr)
        again = zv(argv, tmp_path)
        assert "damaged" not in again.stderr and len(copies(tmp_path)) == 1, (how, again.stderr)


def test_damaged_stubs_are_dropped_with_one_line(tmp_path):
    """A stub region in the copy's file that is not what the windows make
    (a byte of a stub, of the tail, of the padding): one line, the copy
    removed, the windows written privately, the program right."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    data = the_copy(tmp_path).read_bytes()
    x = stubs_at(data, trailer_at(data))
    for at in (x + 3, x + 16 + 70, len(data) - 1):
        bad = bytearray(data)
        bad[at] ^= 0x01
        the_copy(tmp_path).write_bytes(bytes(bad))
        res = zv(argv, tmp_path)
        assert (res.stdout, res.returncode) == (good.stdout, good.returncode), at
        assert rewritten(res) == rewritten(good), res.stderr
        lines = [l for l in res.stderr.splitlines() if "damaged cache file" in l]
        assert len(lines) == 1 and "stubs do not match" in lines[0], (at, res.stderr)
        assert the_copy(tmp_path).read_bytes() == data, at  # stored again, the same


def fnv_name(key):
    h = 0xcbf29ce484222325
    for c in key:
        h = ((h ^ c) * 0x100000001b3) & MASK
    return "%016x.pgs" % h


def test_copy_of_another_format_is_not_read(tmp_path):
    """A copy whose key has another stubs' format (an older zvisor's,
    without its stub region) lies under another name: it is never read,
    the run stores its own, no line."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    c = the_copy(tmp_path)
    data = bytearray(c.read_bytes())
    t = trailer_at(data)
    old = data[:stubs_at(bytes(data), t)]
    magic = struct.unpack_from("<Q", old, t)[0] ^ ((0x02004010 ^ 0x01004010) << 24)
    struct.pack_into("<Q", old, t, magic)
    old = resum(bytes(old), t)[:t + trailer_len(old, t)]
    c.unlink()
    stale = c.parent / fnv_name(old[t:t + 80])
    stale.write_bytes(old)
    stale.chmod(0o600)
    res = zv(argv, tmp_path)
    assert (res.stdout, res.returncode) == (good.stdout, good.returncode)
    assert without_stats(res.stderr) == "", res.stderr
    assert stale.read_bytes() == old and c.read_bytes() == bytes(data)


def test_stubs_from_the_copy_match_private_ones(tmp_path):
    """A warm run maps libc's stub region from its copy (no anonymous
    memory) and its bytes are those a cold run wrote into a private region
    at the same offset from the code."""
    cold = sleeping(tmp_path / "c")
    warm = None
    try:
        code = [l.split() for l in host_maps(cold.pid, "maps").splitlines() if "r-xp" in l and "libc.so" in l]
        lo, hi = (int(x, 16) for x in code[0][0].split("-"))
        warm = sleeping(tmp_path / "c")
        blocks = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", host_maps(warm.pid))
        heads = [b.split("\n", 1)[0].split() for b in blocks]
        (copy, wlo), = {(h[5], int(h[0].split("-")[0], 16)) for h in heads
                        if len(h) >= 6 and h[1] == "r-xp" and h[5].endswith(".pgs") and h[2] == code[0][2]
                        and int(h[0].split("-")[1], 16) - int(h[0].split("-")[0], 16) == hi - lo}
        data = Path(copy).read_bytes()
        t = trailer_at(data)
        region = struct.unpack_from("<q", data, t + 80)[0]
        x = stubs_at(data, t)
        (block,) = [b for b, h in zip(blocks, heads) if int(h[0].split("-")[0], 16) == wlo + region]
        head = block.split("\n", 1)[0].split()
        assert head[5] == copy and int(head[2], 16) == x, head
        assert re.search(r"^Anonymous:\s+0 kB", block, re.M), block
        size = int(head[0].split("-")[1], 16) - (wlo + region)
        with open("/proc/%d/mem" % cold.pid, "rb") as mem:
            mem.seek(lo + region)
            private = mem.read(size)
        assert private == data[x:x + size]
        with open("/proc/%d/mem" % warm.pid, "rb") as mem:
            mem.seek(wlo + region)
            assert mem.read(size) == private
    finally:
        for p in (cold, warm):
            if p:
                p.kill()
                p.wait()


def test_copy_others_may_write_is_not_used(tmp_path):
    """A copy others may write (or another user's) is not mapped and not
    removed as damaged: no line; the run stores its own in its place."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    c = the_copy(tmp_path)
    c.chmod(0o666)
    res = zv(argv, tmp_path)
    assert (res.stdout, res.returncode) == (good.stdout, good.returncode)
    assert without_stats(res.stderr) == "", res.stderr
    assert the_copy(tmp_path).stat().st_mode & 0o777 == 0o600


def test_region_place_taken_falls_back(tmp_path):
    """A copy whose stub region would lie over the code itself (its place
    taken): the windows are written privately, as without a copy."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    c = the_copy(tmp_path)
    data = bytearray(c.read_bytes())
    t = trailer_at(data)
    region = 0  # at the mapping's own address
    struct.pack_into("<q", data, t + 80, region)
    # and the windows' jumps made for that place, so that the code is
    # what the windows make (else the copy is dropped as damaged)
    off = struct.unpack_from("<Q", data, t + 64)[0]
    nw = struct.unpack_from("<Q", data, t + 88)[0]
    for i in range(nw):
        p, s_, d = struct.unpack_from("<QQQ", data, t + HEAD + i * WINDOW)
        at = d or p
        struct.pack_into("<i", data, at + 1, region + 16 + 64 * i - (at - off) - 5)
    c.write_bytes(resum(bytes(data), t))
    res = zv(argv, tmp_path)
    assert (res.stdout, res.returncode) == (good.stdout, good.returncode)
    assert without_stats(res.stderr) == "" and rewritten(res) == rewritten(good), res.stderr


def test_concurrent_writers_leave_whole_copies(tmp_path):
    env = env_for(tmp_path)
    argv = [str(ZVISOR), "run", "--", built("stubwin")]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert len({o for o, _ in outs}) == 1 and all(e == b"" for _, e in outs), outs
    assert copies(tmp_path) and not [e for e in entries(tmp_path) if e.name.endswith(".tmp")]
    res = zv([built("stubwin")], tmp_path)
    assert "damaged" not in res.stderr and res.stdout == outs[0][0].decode(), res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_full_disk_means_no_copy(tmp_path):
    """Room for the windows' entries but not for libc's copy: no copy, no
    line, and the warm run is right."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        native = run([built("stubwin")])
        for _ in range(2):
            res = zv([built("stubwin")], mnt)
            assert (res.stdout, res.returncode) == (native.stdout, native.returncode)
            assert without_stats(res.stderr) == "", res.stderr
        assert not [e for e in (mnt / "zvisor").iterdir() if e.name.endswith(".tmp")]
        assert all(e.stat().st_size < (1 << 20) for e in (mnt / "zvisor").iterdir())
    finally:
        subprocess.run(["umount", str(mnt)])


def test_cap_evicts_least_recently_used(tmp_path):
    """ZVISOR_CACHE_MAX=2 (MiB): the copies of libc and ld.so fill it; a
    new program's copy evicts the oldest, and the directory stays within
    the bound."""
    cap = 2 << 20
    run([str(ZVISOR), "run", "--", "/bin/true"], env=env_for(tmp_path, ZVISOR_CACHE_MAX="2"))
    first = {e.name for e in copies(tmp_path)}
    assert first
    time.sleep(0.05)
    res = zv([built("stubwin.static")], tmp_path, ZVISOR_CACHE_MAX="2")
    assert res.returncode == 0 and "damaged" not in res.stderr
    now = {e.name for e in copies(tmp_path)}
    assert now - first, "the new program's copy was not stored"
    assert first - now, "nothing was evicted"
    assert sum(e.stat().st_blocks * 512 for e in entries(tmp_path)) <= cap
    big = zv([built("stubwin.static")], tmp_path / "tiny", ZVISOR_CACHE_MAX="0")
    assert big.stdout == res.stdout and copies(tmp_path / "tiny") == []


MEMOPS = r'''
import ctypes, mmap, os, sys, threading, subprocess, hashlib
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
def text():
    for l in open("/proc/self/maps"):
        f = l.split()
        if len(f) >= 6 and f[1] == "r-xp" and "libc.so" in f[5]:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            return lo, hi, f[5], l.split(None, 2)[2]
lo, hi, path, tail = text()
print("libc code", tail.strip())
# write a byte over itself: the page becomes the process's own
page = lo + 4096 * 5
print("mprotect rw", libc.mprotect(page, 4096, 7))
b = ctypes.c_ubyte.from_address(page + 17); b.value = b.value
print("mprotect rx", libc.mprotect(page, 4096, 5))
print("after write", text()[3].strip() == tail.strip() or "split", os.getpid() > 0)
# drop every page: they come back from the mapped file
print("madvise", libc.madvise(lo, hi - lo, 4))  # MADV_DONTNEED
print("still runs", len(os.listdir("/")) > 0)
# a mapping of the library by the program itself: moved, grown, cut
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size & ~4095
m = libc.mmap(None, size, 5, 2, fd, 0)
os.close(fd)
print("mapped", m not in (None, ctypes.c_void_p(-1).value))
head = hashlib.sha256(ctypes.string_at(m, 64)).hexdigest()[:16]
n = libc.mremap(m, size, size + 8192, 1)  # MREMAP_MAYMOVE
print("mremap", n != ctypes.c_void_p(-1).value, hashlib.sha256(ctypes.string_at(n, 64)).hexdigest()[:16] == head)
print("munmap part", libc.munmap(n + 4096, 8192), hashlib.sha256(ctypes.string_at(n, 64)).hexdigest()[:16] == head)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    print("child", len(os.listdir("/")) > 0); sys.stdout.flush(); os._exit(3)
print("child status", os.waitpid(pid, 0)[1] >> 8)
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i * i)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("threads", sorted(out))
sys.stdout.flush()
print(subprocess.run(["/bin/echo", "exec ok"], capture_output=True, text=True).stdout.strip())
'''


def test_memory_calls_over_a_copy(tmp_path):
    """Over libc's code mapped from its copy: mprotect and a write, madvise
    DONTNEED, the library mapped by the program itself then moved, grown
    and cut, fork, threads and exec all behave as natively."""
    script = tmp_path / "memops.py"
    script.write_text(MEMOPS)
    native = run(["python3", str(script)])
    assert native.returncode == 0, native
    cache = tmp_path / "c"
    for _ in range(2):  # cold, then warm (mapping the copies)
        res = run([str(ZVISOR), "run", "--", "python3", str(script)], env=env_for(cache))
        zvtest.assert_same(native, res, "memops")
        assert copies(cache)


def test_checkpoint_restore_without_the_copy(tmp_path, tmp_path_factory):
    """A process mapping copies, checkpointed; the copies deleted; the
    restore finishes the run as natively (the image holds the original's
    path and the window pages)."""
    if cr.core_missing():
        pytest.skip(cr.core_missing())
    case = cr.CASE["counter"]
    work = tmp_path / "w"
    work.mkdir()
    nat, _, _ = cr.run_native(case, str(work))
    cache = tmp_path / "cache"
    run(zvtest.zv_argv(case.argv(str(work))), env=env_for(cache), cwd=str(work))
    assert copies(cache)
    g = cr.Running(zvtest.zv_argv(case.argv(str(work))), cwd=str(work), env=env_for(cache))
    try:
        g.wait_first_line()
        assert ".pgs" in host_maps(g.pid, "maps")
        image = tmp_path / "image"
        cr.checkpoint(g.pid, image)
        orig = g.finish()
    finally:
        g.kill()
    for c in copies(cache):
        c.unlink()
    rest = cr.zv("restore", image, cwd=str(work))
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, "restore without the shared copies")


def test_poisoned_copy_never_runs(tmp_path):
    """A copy whose code bytes were changed (every byte outside the
    windows made int3), its trailer and stubs intact: its mark (an mtime
    from its own inode, which the write replaced) is gone, so its code is
    compared with the original's and it is dropped with one line before it
    maps; the program runs right (it would die of SIGTRAP in the copy), and
    the next run stores a good copy again."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    c = the_copy(tmp_path)
    data = bytearray(c.read_bytes())
    t = trailer_at(data)
    off, length = struct.unpack_from("<QQ", data, t + 64)
    nw = struct.unpack_from("<Q", data, t + 88)[0]
    kept = set()
    for i in range(nw):
        p, s, d = struct.unpack_from("<QQQ", data, t + HEAD + i * WINDOW)
        kept.update(range(p, s + 2))
        kept.update(range(d, d + 5) if d else ())
    for x in range(off, off + length):
        if x not in kept:
            data[x] = 0xcc
    c.write_bytes(bytes(data))
    res = zv(argv, tmp_path)
    assert (res.stdout, res.returncode) == (good.stdout, good.returncode), res.stderr
    lines = [l for l in without_stats(res.stderr).splitlines()]
    assert len(lines) == 1 and "code differs from the file" in lines[0], res.stderr
    again = zv(argv, tmp_path)
    assert without_stats(again.stderr) == "" and the_copy(tmp_path).read_bytes() != bytes(data)


def test_copy_moved_elsewhere_is_checked_once(tmp_path):
    """A copy that is another file now (copied, so another inode: as a
    cache carried from elsewhere) has lost its mark: its code is compared
    with the original's once, found right, used and marked again."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    c = the_copy(tmp_path)
    data = c.read_bytes()
    c.unlink()
    c.write_bytes(data)
    c.chmod(0o600)
    mark = os.stat(c).st_mtime_ns
    res = zv(argv, tmp_path)
    assert (res.stdout, res.returncode, without_stats(res.stderr)) == (good.stdout, good.returncode, "")
    assert the_copy(tmp_path).read_bytes() == data and os.stat(c).st_mtime_ns != mark
