"""The stubs platform's cache of each file's windows (intercept/sitecache.c):
a warm run behaves as a cold one, a changed file is never served stale
windows, a damaged entry is dropped with one line, --no-cache writes
nothing, concurrent writers leave whole entries, and a full disk only
means no cache."""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from zvtest import ZVISOR, guest, run


def built(name):
    path = guest(name)
    assert os.path.exists(path), "guest %s is not built: run `make -C tests/guests`" % name
    return str(path)


def zv(argv, cache, *opts, **envs):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), **envs)
    return run([ZVISOR, "run", "--stats"] + list(opts) + ["--"] + [str(a) for a in argv], env=env)


def entries(cache):
    d = cache / "zvisor"
    return sorted(d.iterdir()) if d.exists() else []


def is_vdso(entry):
    """The host's vDSO's entry: keyed by its bytes, device ~0."""
    return entry.read_bytes()[8:16] == b"\xff" * 8


def rewritten(res):
    m = re.search(r"rewritten=(\d+)", res.stderr)
    assert m, res.stderr
    return int(m.group(1))


def without_stats(text):
    return re.sub(r"zvisor: stats: .*\n", "", text)


@pytest.mark.parametrize("name", ["stubwin", "stubwin.static", "stubwin.musl", "goguest"])
def test_warm_is_cold(name, tmp_path):
    """The second run reads the entries the first wrote: same output, same
    stubs, and no entry is added."""
    argv = [built(name)] + (["files"] if name == "goguest" else [])
    cold = zv(argv, tmp_path)
    made = entries(tmp_path)
    assert made, cold.stderr
    warm = zv(argv, tmp_path)
    assert (warm.stdout, warm.returncode) == (cold.stdout, cold.returncode)
    assert without_stats(warm.stderr) == without_stats(cold.stderr) == ""
    assert rewritten(warm) == rewritten(cold) > 0
    assert entries(tmp_path) == made


def test_changed_file_is_not_stale(tmp_path):
    """A program replaced by another at the same path (new inode, size or
    mtime) is scanned again: the new program runs correctly."""
    prog = tmp_path / "prog"
    shutil.copy(built("stubwin.static"), prog)
    first = zv([prog], tmp_path / "c")
    assert first.returncode == 0 and "win_kill returned the pid" in first.stdout, first
    shutil.copy(built("hello.static"), prog)
    second = zv([prog], tmp_path / "c")
    native = run([prog])
    assert (second.stdout, second.returncode) == (native.stdout, native.returncode)
    assert without_stats(second.stderr) == native.stderr


def test_damaged_entry_is_dropped_with_one_line(tmp_path):
    """Each kind of damage (truncated, garbage, windows that do not hold a
    syscall) costs one line on stderr, and the run is still right. (No
    shared copies, which would be read instead: test_sharedtext.py.)"""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path, ZVISOR_CACHE_MAX="0")
    (entry,) = [e for e in entries(tmp_path) if e.stat().st_size > 104 and not is_vdso(e)]
    damage(argv, tmp_path, entry, good, ZVISOR_CACHE_MAX="0")


def damage(argv, tmp_path, entry, good, **envs):
    data = entry.read_bytes()
    for damaged in (data[:50], data[:96] + b"\xff" * (len(data) - 96), data[:-8] + b"\x01" * 8):
        entry.write_bytes(damaged)
        res = zv(argv, tmp_path, **envs)
        assert res.stdout == good.stdout and res.returncode == good.returncode
        lines = [l for l in res.stderr.splitlines() if "damaged cache file" in l]
        assert len(lines) == 1, res.stderr
        again = zv(argv, tmp_path, **envs)  # rewritten whole by the run that dropped it
        assert "damaged" not in again.stderr, again.stderr


def test_vdso_entry(tmp_path):
    """The host's vDSO is decoded once: later processes (and execs) read its
    windows from one entry keyed by its bytes; a damaged one costs a line."""
    argv = [built("stubwin.static")]
    good = zv(argv, tmp_path)
    (entry,) = [e for e in entries(tmp_path) if is_vdso(e)]
    assert entry.stat().st_size > 104  # it has windows
    assert entry.read_bytes()[96:104] != b"\xff" * 8  # and sudoff's count: no scan when it is served
    damage(argv, tmp_path, entry, good)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_vdso_entry_carried_across_exec(tmp_path):
    """An exec'd image takes the vDSO's windows from the exec state: only
    the first image reads its entry, and the run is as without a cache."""
    argv = ["/bin/sh", "-c", "/bin/true && exec /bin/echo done"]
    zv(argv, tmp_path)  # warm
    (entry,) = [e for e in entries(tmp_path) if is_vdso(e)]
    log = tmp_path / "strace.log"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    res = run(["strace", "-f", "-e", "trace=openat", "-o", str(log), str(ZVISOR), "run", "--"] + argv, env=env)
    assert res.stdout == "done\n" and res.returncode == 0, res.stderr
    opens = [l for l in log.read_text().splitlines() if entry.name in l]
    assert len(opens) == 1, opens
    cold = zv(argv, tmp_path, "--no-cache")
    assert (cold.stdout, without_stats(cold.stderr)) == (res.stdout, "")


def test_no_cache(tmp_path):
    res = zv([built("hello")], tmp_path, "--no-cache")
    assert res.returncode == 0 and rewritten(res) > 0, res.stderr
    assert entries(tmp_path) == []


def test_no_cache_across_exec(tmp_path):
    """--no-cache holds for the programs the guest execs too."""
    res = zv(["/bin/sh", "-c", "/bin/true; /bin/echo done"], tmp_path, "--no-cache")
    assert res.stdout == "done\n" and entries(tmp_path) == [], res.stderr


def test_concurrent_writers(tmp_path):
    """Eight cold runs at once: each is right, and the entries they leave
    are whole (a later run finds nothing damaged)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    argv = [str(ZVISOR), "run", "--", built("stubwin"), ]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert len({o for o, _ in outs}) == 1 and all(e == b"" for _, e in outs), outs
    assert not [e for e in entries(tmp_path) if e.name.endswith(".tmp")]
    res = zv([built("stubwin")], tmp_path)
    assert "damaged" not in res.stderr, res.stderr


def test_unwritable_cache_dir(tmp_path):
    """A cache directory that cannot be written: no cache, no message."""
    (tmp_path / "zvisor").mkdir(mode=0o500)
    if os.access(tmp_path / "zvisor", os.W_OK):
        pytest.skip("root writes read-only directories: see test_full_disk")
    res = zv([built("hello")], tmp_path)
    assert res.returncode == 0 and without_stats(res.stderr) == "", res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_full_disk(tmp_path):
    """A cache on a full file system: entries cannot be written; the run is
    right and says nothing."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "zvisor").mkdir()
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        os.close(fd)
        res = zv([built("stubwin")], mnt)
        native = run([built("stubwin")])
        assert (res.stdout, res.returncode) == (native.stdout, native.returncode)
        assert without_stats(res.stderr) == "", res.stderr
        assert not [e for e in (mnt / "zvisor").iterdir() if e.stat().st_size > 0 and e.name.endswith(".tmp")]
    finally:
        subprocess.run(["umount", str(mnt)])


# --- a user without a home directory ------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="needs root and setpriv to run as another user")


@pytest.fixture
def stranger():
    """A uid no one uses here (its /tmp/zvisor-UID is this test's alone),
    and a directory others may enter (the suite's own are root's) with
    copies of zvisor and two guests it may run; its fallback directory is
    removed before and after."""
    uid = 64000 + os.getpid() % 1000
    top = Path(tempfile.mkdtemp(prefix="zvisor-stranger-"))
    os.chmod(top, 0o755)
    for name in (ZVISOR, built("stubwin"), built("hello")):
        shutil.copy(name, top)
    fallback = "/tmp/zvisor-%d" % uid
    subprocess.run(["rm", "-rf", fallback])
    yield uid, top, fallback
    subprocess.run(["rm", "-rf", fallback, str(top)])


def as_stranger(stranger, argv, *opts, **env):
    uid, top, _ = stranger
    env = dict({"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}, **env)
    return run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "env", "-i"] +
               ["%s=%s" % kv for kv in env.items()] + [str(top / "zvisor"), "run", "--stats"] + list(opts) +
               ["--"] + [str(a) for a in argv], cwd="/")


def analysed(res):
    return [int(n) for n in re.findall(r"analysed=(\d+)", res.stderr)]


@needs_root
def test_homeless_user_caches_in_tmp(stranger):
    """No writable $XDG_CACHE_HOME or ~/.cache (HOME=/nonexistent): the cache
    is /tmp/zvisor-UID, made 0700 and the user's; the second run decodes
    nothing."""
    uid, top, fallback = stranger
    cold = as_stranger(stranger, [top / "stubwin"])
    st = os.lstat(fallback)
    assert (st.st_uid, st.st_mode & 0o7777) == (uid, 0o700), oct(st.st_mode)
    assert [e for e in os.listdir(fallback) if e.endswith(".win")]
    warm = as_stranger(stranger, [top / "stubwin"])
    assert (warm.stdout, warm.returncode, without_stats(warm.stderr)) == (cold.stdout, cold.returncode, "")
    assert analysed(cold)[0] > 0 and analysed(warm) == [0], (cold.stderr, warm.stderr)


@needs_root
def test_runtime_dir_first(stranger):
    """With $XDG_RUNTIME_DIR (the user's private directory), the cache is
    there, not in /tmp."""
    uid, top, fallback = stranger
    rt = top / "run"
    rt.mkdir(mode=0o700)
    os.chown(rt, uid, uid)
    res = as_stranger(stranger, [top / "hello"], XDG_RUNTIME_DIR=str(rt))
    assert res.returncode == 0 and without_stats(res.stderr) == "hello on stderr\n", res.stderr
    assert os.listdir(rt / "zvisor") and not os.path.exists(fallback)


@needs_root
@pytest.mark.parametrize("trap", ["symlink", "foreign", "open"])
def test_unsafe_tmp_dir_refused(stranger, trap):
    """A /tmp/zvisor-UID that is a symlink, another user's, or open to
    others is not used (one line), as tmux and ssh-agent refuse theirs; the
    program runs as natively and nothing is written there."""
    uid, top, fallback = stranger
    target = top / "elsewhere"
    target.mkdir(mode=0o777)
    os.chmod(target, 0o777)
    if trap == "symlink":
        os.symlink(target, fallback)
    else:
        os.mkdir(fallback, 0o777 if trap == "open" else 0o700)
        os.chmod(fallback, 0o777 if trap == "open" else 0o700)
        if trap == "open":
            os.chown(fallback, uid, uid)
    res = as_stranger(stranger, [top / "hello"])
    native = run([top / "hello"])
    assert (res.stdout, res.returncode) == (native.stdout, native.returncode)
    assert without_stats(res.stderr) == (
        "zvisor: not using %s for the cache: not a private directory of this user's\n" % fallback
        + native.stderr), res.stderr
    assert os.listdir(target) == [] and (trap == "symlink" or os.listdir(fallback) == [])


def test_tree_knows_without_a_cache(tmp_path):
    """--no-cache: nothing is written, but an exec'd image takes what its
    parent knew (a memfd through the exec): the shell decodes libc and
    ld.so, its children only /bin/true."""
    res = zv(["/bin/sh", "-c", "/bin/true; /bin/true; /bin/echo done"], tmp_path, "--no-cache")
    assert res.stdout == "done\n" and entries(tmp_path) == [], res.stderr
    counts = analysed(res)
    assert len(counts) == 4 and counts[-1] >= 3 and counts[:3] == [1, 1, 1], res.stderr


@pytest.mark.parametrize("how", ["inprocess", "host"])
def test_tree_knows_across_either_exec(how, tmp_path):
    """--no-cache: an image exec'd in this process keeps what the tree knew
    (its memory stays), one the host exec'd takes it from the memfd; either
    way the shell's exec decodes only /bin/echo."""
    res = zv(["/bin/sh", "-c", "/bin/true; exec /bin/echo done"], tmp_path, "--no-cache", "--exec=" + how)
    assert res.stdout == "done\n" and entries(tmp_path) == [], res.stderr
    assert analysed(res)[-1] == 1 and re.findall(r"inexec=(\d+)", res.stderr)[-1] == str(int(how == "inprocess")), \
        res.stderr


@pytest.mark.parametrize("how", ["inprocess", "host"])
def test_exec_finds_the_cache_in_its_new_environment(how, tmp_path):
    """An exec'd image finds the cache's place in the environment it was
    given, as a new process would: an exec in this process as the host's."""
    other = tmp_path / "other"
    other.mkdir()
    res = zv(["/bin/sh", "-c", "exec /usr/bin/env XDG_CACHE_HOME=%s /bin/echo done" % other], tmp_path,
             "--exec=" + how)
    assert res.stdout == "done\n" and res.returncode == 0, res.stderr
    assert entries(tmp_path) and entries(other), res.stderr



def test_vfork_childs_exec_leaves_the_parents_fds():
    """--no-cache: a vfork child (dash runs commands so) whose exec is the
    host's makes the memfd of what the tree knows in the memory it shares
    with the shell; the shell's own next exec neither reads nor closes its
    fd of that number (the guest's fd 3, opened after the child's exec),
    as natively."""
    script = "/bin/true; exec 3</etc/hostname; exec /bin/cat /proc/self/fd/3"
    native = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True)
    res = run([ZVISOR, "run", "--no-cache", "--", "/bin/sh", "-c", script])
    assert (res.stdout, res.returncode) == (native.stdout, 0), res.stderr


def test_root_keeps_the_users_cache_place(tmp_path):
    """Under --root the cache is where zvisor's own environment says
    (XDG_CACHE_HOME), for the whole tree: a guest that names another place
    for its commands (a host exec of a vfork child, an in-process exec)
    writes nothing there."""
    other = tmp_path / "other"
    res = zv(["/bin/sh", "-c", 'XDG_CACHE_HOME="$1" /bin/true; XDG_CACHE_HOME="$1" exec /bin/echo ok', "sh",
              str(other)], tmp_path, "--root", "/")
    assert (res.stdout, res.returncode) == ("ok\n", 0), res
    assert entries(tmp_path), res.stderr
    assert not other.exists()


def traced(argv, cache, *opts):
    """zvisor run under strace -f (openat only): the result, its trace in stderr."""
    if not shutil.which("strace"):
        pytest.skip("needs strace")
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    return run(["strace", "-f", "-e", "trace=openat", "-o", "/dev/stderr", str(ZVISOR), "run", "--stats"]
               + list(opts) + ["--"] + [str(a) for a in argv], env=env)


def cache_opens(trace, ext, missing=False):
    """The cache files of extension ext that the trace opened (missing: the
    ones it looked for and did not find)."""
    return re.findall(r'openat\(AT_FDCWD, "[^"]*/zvisor/([0-9a-f]{16}\.%s)".*= %s' % (ext, "-1 ENOENT" if missing else "\\d"),
                      trace)


def bash_loop(body, n):
    """bash runs each command in a fork child, whose exec stays in the process."""
    if not shutil.which("bash"):
        pytest.skip("needs bash")
    return ["bash", "-c", "for i in %s; do %s; done" % (" ".join(str(i) for i in range(n)), body)]


def test_fork_children_share_what_code_without_windows_they_read(tmp_path):
    """/bin/true has no window, so no copy: once one fork child of the tree
    read its windows' entry, its siblings neither look for the copy nor
    open the entry (intercept/sitememo.c); each sibling still runs right."""
    argv = bash_loop("/bin/true", 4)
    zv(argv, tmp_path)  # warm
    res = traced(argv, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    wins, nocopy = cache_opens(res.stderr, "win"), cache_opens(res.stderr, "pgs", missing=True)
    assert wins and nocopy, res.stderr[-3000:]
    assert max(wins.count(w) for w in wins) == 1 and max(nocopy.count(p) for p in nocopy) == 1, res.stderr[-3000:]
    off = traced(argv, tmp_path, "--exec=host")  # every exec a new start: nothing shared
    assert max(cache_opens(off.stderr, "win").count(w) for w in wins) == 4, off.stderr[-3000:]


def test_program_changed_after_the_tree_read_it(tmp_path):
    """A program the tree knows as one without windows, replaced at the same
    path by one with windows between two children's execs, is decoded
    again in the next child (its identity is the key): it runs as natively."""
    if not shutil.which("bash"):
        pytest.skip("needs bash")
    prog = tmp_path / "prog"
    shutil.copy("/bin/true", prog)
    script = 'for i in 1 2; do "$1"; done; cp "$2" "$1"; "$1"; echo $?'
    argv = ["bash", "-c", script, "bash", str(prog), built("stubwin.static")]
    res = zv(argv, tmp_path / "c")
    shutil.copy("/bin/true", prog)
    native = run(argv)
    assert (res.stdout, res.returncode) == (native.stdout, native.returncode), res.stderr
    assert "win_kill returned the pid" in res.stdout and "damaged" not in res.stderr, res.stderr


def entry_of_file(cache, path, ext):
    """The cache file of extension ext whose key names path's device and
    inode (a windows' entry's key comes first, a copy's in its trailer)."""
    st = os.stat(path)
    ident = st.st_dev.to_bytes(8, "little") + st.st_ino.to_bytes(8, "little")
    found = [e for e in entries(cache) if e.name.endswith("." + ext) and ident in e.read_bytes()]
    assert len(found) == 1, (path, found)
    return found[0]


def test_cache_file_changed_after_the_tree_read_it(tmp_path):
    """A cache file damaged between a parent's read and its children's
    execs is never used: /bin/true's windows' entry, which the tree read
    once and checked, is not read again in the tree, and the next run that
    reads it drops it with one line; ld.so's copy, which each exec opens,
    fstats and reads, is dropped with one line by the first child after the
    damage. Every command runs right."""
    if not shutil.which("bash"):
        pytest.skip("needs bash")
    zv(["/bin/true"], tmp_path)  # warm
    win = entry_of_file(tmp_path, "/bin/true", "win")
    copy = entry_of_file(tmp_path, os.path.realpath("/lib64/ld-linux-x86-64.so.2"), "pgs")
    garbage = win.read_bytes()[:96] + b"\xff" * 8
    damage = ("python3 - %s %s <<'E'\nimport sys\n"
              "open(sys.argv[1], 'r+b').write(bytes.fromhex('%s'))\n"
              "f = open(sys.argv[2], 'r+b'); f.seek(8192); f.write(b'\\xcc' * 64)\nE\n") % (win, copy, garbage.hex())
    script = "for i in 1 2; do /bin/true; done; %s for i in 1 2; do /bin/true || echo bad; done; echo done" % damage
    res = zv(["bash", "-c", script], tmp_path)
    assert (res.stdout, res.returncode) == ("done\n", 0), res.stderr
    lines = [l for l in res.stderr.splitlines() if "damaged cache file" in l]
    assert len(lines) == 1 and str(copy) in lines[0], res.stderr
    again = zv(["/bin/true"], tmp_path)
    lines = [l for l in again.stderr.splitlines() if "damaged cache file" in l]
    assert again.returncode == 0 and len(lines) == 1 and str(win) in lines[0], again.stderr
