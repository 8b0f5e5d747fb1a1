"""--fake-root and --ids (DESIGN "Virtual ids and ownership"): the oracle is
root. Each check runs natively as root and under `zvisor run --fake-root`
both as root and as an ordinary user (nobody), who owns the scratch
directories there, and the two must print the same: credentials and their
rules (guest fakeids), owners, modes and device nodes (fakefiles), a static
Go program (fakeidgo), tar round trips with GNU tar and busybox, records
kept across runs in the file's xattr and in the database, a filesystem
without user xattrs, python3's os module."""
import atexit
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import zvtest
from guestdesc import built, builds, get
from zvtest import PLATFORMS, assert_same, run, user_area, user_tmp, zv_argv

USER = "nobody"
USERS = [None, USER]  # None: root

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or zvtest.TEST_USER is not None,
                                reason="the native oracle runs as root (make check's main pass)")


def _user_can_run(path, user):
    return run(["test", "-x", str(path)], user=user).returncode == 0


_copies = {}


def reachable(path, user):
    """path itself if user can run it, else a copy in the user's area."""
    path = str(path)
    if user is None or _user_can_run(path, user):
        return path
    if path not in _copies:
        d = Path(user_area(user)) / "bin"
        d.mkdir(exist_ok=True)
        dest = d / Path(path).name
        shutil.copy2(path, dest)
        os.chmod(dest, 0o755)
        _copies[path] = str(dest)
    return _copies[path]


_root_base = []


def scratch(tmp_path, user, name):
    """A new empty directory that belongs to user, which every user may
    search (tmp_path's parents are root's alone: a set-user-ID program run
    as a user must be reachable)."""
    if user is not None:
        return user_tmp(user)
    if not _root_base:
        _root_base.append(tempfile.mkdtemp(prefix="zvisor-fakeid-"))
        os.chmod(_root_base[0], 0o755)
        atexit.register(shutil.rmtree, _root_base[0], True)
    d = tempfile.mkdtemp(dir=_root_base[0], prefix=name + "-")
    os.chmod(d, 0o755)
    return d


def fake(argv, platform=None, user=None, db=None, opts=("--fake-root",), **kw):
    """argv under zvisor with virtual ids, as user, with the database db."""
    zv = reachable(zvtest.ZVISOR, user)
    cmd = zv_argv(argv, platform, list(opts) + (["--fake-db=" + db] if db else []))
    cmd[0] = zv
    return run(cmd, user=user, **kw)


def platform_params():
    """(platform, user) pairs: every platform as root, all but zpoline (which
    needs root to map page 0) as the user."""
    out = []
    for p in PLATFORMS:
        for u in USERS:
            if u and p.startswith("zpoline"):
                continue
            out.append(pytest.param(p, u, id="%s-%s" % (p, u or "root")))
    return out


def guest_runs(name):
    """(build, mode) of every mode of the guest's default build, and every
    mode of its other builds (on the default platform, as the user)."""
    d = get(name)
    return [(b, m) for b in d.builds() for m in d.modes]


def compare_guest_fake(build, mode, platform, user, tmp_path, opts=("--fake-root",), native_user=None):
    d = get(build.split(".")[0])
    argv = list(d.run(mode).argv)
    ndir = scratch(tmp_path, None, "native")
    zdir = scratch(tmp_path, user, "zvisor")
    native = run([built(build)] + [ndir if a == "DIR" else a for a in argv], user=native_user, cwd=ndir,
                 timeout=d.timeout)
    if native_user is None:
        d.run(mode).check(native)
    db = os.path.join(scratch(tmp_path, user, "db"), "owners.db")
    zv = fake([reachable(built(build), user)] + [zdir if a == "DIR" else a for a in argv], platform, user, db,
              opts, cwd=zdir, timeout=d.timeout)
    assert_same(native, zv, "%s %s as %s on %s" % (build, mode, user or "root", platform))


# --- the guests ---------------------------------------------------------------------

@pytest.mark.parametrize("platform,user", platform_params())
@pytest.mark.parametrize("mode", list(get("fakeids").modes))
def test_ids(mode, platform, user, tmp_path):
    compare_guest_fake("fakeids", mode, platform, user, tmp_path)


@pytest.mark.parametrize("platform,user", platform_params())
@pytest.mark.parametrize("mode", ["setuid", "drop"])
def test_ids_host_exec(mode, platform, user, tmp_path):
    """The ids a process set, and a set-ID file's, after the host's execve
    (the default exec stays in the process: test_ids)."""
    compare_guest_fake("fakeids", mode, platform, user, tmp_path, opts=("--fake-root", "--exec=host"))


@pytest.mark.parametrize("platform,user", platform_params())
@pytest.mark.parametrize("mode", list(get("fakefiles").modes))
def test_files(mode, platform, user, tmp_path):
    compare_guest_fake("fakefiles", mode, platform, user, tmp_path)


@pytest.mark.parametrize("platform,user", platform_params())
@pytest.mark.parametrize("mode", list(get("fakeidgo").modes))
def test_go(mode, platform, user, tmp_path):
    compare_guest_fake("fakeidgo", mode, platform, user, tmp_path)


@pytest.mark.parametrize("build,mode", [(b, m) for b in builds("fakeids", "fakefiles") if "." in b
                                        for m in get(b.split(".")[0]).modes])
def test_static_builds(build, mode, tmp_path):
    """glibc static and static-pie, musl: as the user, on the default platform."""
    compare_guest_fake(build, mode, None, USER, tmp_path)


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("mode", ["ids", "rules", "drop"])
def test_ids_option(mode, user, tmp_path):
    """--ids 1000:100 is the user 1000 with group 100, as setpriv makes it."""
    native = run(["setpriv", "--reuid=1000", "--regid=100", "--clear-groups", built("fakeids"), mode])
    zv = fake([reachable(built("fakeids"), user), mode], None, user,
              os.path.join(scratch(tmp_path, user, "db"), "owners.db"), opts=("--ids", "1000:100"))
    assert_same(native, zv, "fakeids %s under --ids 1000:100 as %s" % (mode, user or "root"))


@pytest.mark.parametrize("mode", list(get("fakefiles").modes))
def test_db_only(mode, tmp_path):
    """--fake-db-only: every record in the database, none in xattrs."""
    compare_guest_fake("fakefiles", mode, None, USER, tmp_path, opts=("--fake-root", "--fake-db-only"))


# --- tar round trips -----------------------------------------------------------------

LISTER = r"""
import os, stat, sys
top = sys.argv[1]
for base, dirs, files in sorted(os.walk(top)):
    for n in sorted(dirs + files):
        p = os.path.join(base, n)
        st = os.lstat(p)
        dev = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)) if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else ""
        print(os.path.relpath(p, top), stat.filemode(st.st_mode), oct(st.st_mode & 0o7777), st.st_uid, st.st_gid,
              st.st_nlink, dev)
"""

MAKE_TREE = r"""
set -e
cd "$1"
mkdir -p etc/skel var/mail tmp dev usr/bin home/u
echo root > etc/passwd
echo secret > etc/shadow; chmod 640 etc/shadow; chown 0:42 etc/shadow
echo bin > usr/bin/su; chmod 4755 usr/bin/su
echo bin > usr/bin/wall; chown 0:5 usr/bin/wall; chmod 2755 usr/bin/wall
chmod 1777 tmp
chown 0:8 var/mail; chmod 2775 var/mail
echo mine > home/u/f; chown -R 1000:1000 home/u; chmod 700 home/u
ln -s ../../etc/passwd usr/bin/link; chown -h 1000:100 usr/bin/link
ln usr/bin/su usr/bin/su2
mknod dev/null c 1 3; chmod 666 dev/null
mknod dev/sda b 8 0; chown 0:6 dev/sda; chmod 660 dev/sda
mkfifo dev/initctl; chmod 600 dev/initctl
"""


def tar_cmds(tool):
    if tool == "busybox":
        bb = shutil.which("busybox")
        if not bb:
            pytest.fail("busybox is not installed (scripts/install-deps.sh installs it)")
        return [bb, "tar", "-cpf"], [bb, "tar", "-xpf"]
    return ["tar", "--numeric-owner", "-cpf"], ["tar", "--numeric-owner", "--same-owner", "-xpf"]


def shared_file(name, text):
    """A file every user can read (tmp_path's parents are root's alone)."""
    d = Path(user_area(USER)) / "files"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(text)
    os.chmod(p, 0o644)
    return str(p)


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("tool", ["gnu", "busybox"])
def test_tar_round_trip(tool, user, tmp_path):
    """A tree made as root and packed natively: unpacked under --fake-root it
    lists as unpacked natively; packed there again and unpacked natively,
    the same again."""
    create, extract = tar_cmds(tool)
    lister = shared_file("lister.py", LISTER)
    orig = Path(scratch(tmp_path, None, "orig"))
    subprocess.run(["sh", "-c", MAKE_TREE, "sh", str(orig)], check=True)
    native_dir = scratch(tmp_path, None, "native")
    archive = os.path.join(native_dir, "in.tar")
    assert run(create + [archive, "-C", str(orig), "."]).returncode == 0
    os.mkdir(os.path.join(native_dir, "x"))
    assert run(extract + [archive, "-C", os.path.join(native_dir, "x")]).returncode == 0
    want = run(["python3", lister, os.path.join(native_dir, "x")])
    assert want.returncode == 0 and "dev/null crw-rw-rw- 0o666 0 0 1 1:3" in want.stdout, want
    area = scratch(tmp_path, user, "area")
    shutil.copy(archive, os.path.join(area, "in.tar"))
    if user:
        zvtest.chown_tree(area, user)
    script = ('set -e; mkdir x; cd x; "$@" ../in.tar; cd ..; python3 %s x; ' % lister +
              '%s out.tar -C x .' % " ".join(create))
    zv = fake(["sh", "-c", script, "sh"] + extract, None, user, os.path.join(area, "owners.db"), cwd=area)
    assert_same(want, zv, "%s tar extracted under --fake-root" % tool)
    back = scratch(tmp_path, None, "back")
    assert run(extract + [os.path.join(area, "out.tar"), "-C", back]).returncode == 0
    again = run(["python3", lister, back])
    assert_same(want, again, "%s tar packed under --fake-root, extracted natively" % tool)


# --- kept across runs ---------------------------------------------------------------

SET = r"""
set -e
cd "$1"
echo x > f; chown 12:34 f; chmod 4750 f
mkdir d; chown 5:6 d; chmod 2770 d
ln -s f l; chown -h 7:8 l
mknod null c 1 3; mknod sda b 8 1; chown 0:6 sda
mkfifo p; chown 9:9 p
ln f f2
"""

SHOW = "cd \"$1\"; for n in f f2 d l null sda p; do stat -c '%n %F %a %u:%g %t:%T %h' $n; done"


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("store", ["xattr", "db-only"])
def test_kept_across_runs(store, user, tmp_path):
    """What one run sets, the next shows; the attribute says it in
    containers/storage's format; the database holds the symlink's and FIFO's."""
    area = scratch(tmp_path, user, "area")
    db = os.path.join(scratch(tmp_path, user, "db"), "owners.db")
    opts = ("--fake-root",) + (("--fake-db-only",) if store == "db-only" else ())
    first = fake(["sh", "-c", SET + SHOW, "sh", area], None, user, db, opts)
    assert first.returncode == 0, first
    second = fake(["sh", "-c", SHOW, "sh", area], None, user, db, opts)
    assert second.stdout == first.stdout and second.returncode == 0, (first, second)
    assert "f regular file 4750 12:34 0:0 2" in second.stdout
    assert "l symbolic link 777 7:8 0:0 1" in second.stdout
    assert "null character special file 644 0:0 1:3 1" in second.stdout
    assert "sda block special file 644 0:6 8:1 1" in second.stdout
    assert "p fifo 644 9:9 0:0 1" in second.stdout
    xattr = "user.containers.override_stat"
    got = {n: os.getxattr(os.path.join(area, n), xattr).decode() if xattr in os.listxattr(os.path.join(area, n))
           else None for n in ("f", "d", "null", "sda")}
    if store == "db-only":
        assert got == dict.fromkeys(got), got
    else:
        assert got == {"f": "12:34:4750:file", "d": "5:6:2770:dir", "null": "0:0:0644:char-1-3",
                       "sda": "0:6:0644:block-8-1"}, got
    # the native view: plain files, the host user's
    st = os.lstat(os.path.join(area, "null"))
    assert st.st_mode & 0o170000 == 0o100000 and st.st_size == 0
    # unlinking the last link drops the database's record
    third = fake(["sh", "-c", "cd \"$1\"; rm p l; mkfifo p; ln -s f l; stat -c '%n %u:%g' p l", "sh", area],
                 None, user, db, opts)
    assert third.stdout == "p 0:0\nl 0:0\n", third


def test_database_shared_by_concurrent_runs(tmp_path):
    """Four runs at once write 150 records each into one database (its table
    rebuilt several times as it grows) and one run reads them all back."""
    area = scratch(tmp_path, None, "area")
    db = os.path.join(area, "owners.db")
    write = ('cd "$1"; i=0; while [ $i -lt 150 ]; do ln -s x "l$2.$i"; chown -h "$2:$i" "l$2.$i"; '
             'i=$((i + 1)); done')
    procs = [subprocess.Popen(zv_argv(["sh", "-c", write, "sh", area, str(k)], None,
                                      ["--fake-root", "--fake-db", db]), stderr=subprocess.PIPE)
             for k in range(1, 5)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    res = fake(["sh", "-c", 'cd "$1"; for f in l*; do stat -c "%n %u:%g" "$f"; done', "sh", area], db=db)
    want = sorted("l%d.%d %d:%d" % (k, i, k, i) for k in range(1, 5) for i in range(150))
    assert sorted(res.stdout.splitlines()) == want, res.stderr


def test_records_from_other_tools(tmp_path):
    """An attribute containers/storage wrote (three fields, or a device's
    type with more parts) is read as it reads it; a malformed one is not."""
    area = tmp_path / "a"
    area.mkdir()
    for name, value in (("three", "5:6:0755"), ("dev", "0:0:0620:char-4-1-extra"), ("bad", "x:1:0644"),
                        ("sticky", "0:0:1777:dir")):
        p = area / name
        p.mkdir() if name == "sticky" else p.write_text("")
        os.setxattr(p, "user.containers.override_stat", value.encode())
    res = fake(["sh", "-c", "cd \"$1\"; for n in three dev bad sticky; do stat -c '%n %F %a %u:%g %t:%T' $n; done",
                "sh", str(area)], db=str(tmp_path / "db"))
    assert res.stdout == ("three regular empty file 755 5:6 0:0\n"
                          "dev character special file 620 0:0 4:1\n"
                          "bad regular empty file 644 0:0 0:0\n"
                          "sticky directory 1777 0:0 0:0\n"), res


@pytest.mark.parametrize("platform", [p for p in ("stubs", "sud", "seccomp") if p in zvtest.SELECTED_PLATFORMS])
def test_attribute_cache_sees_other_tools(platform, tmp_path):
    """What a run learnt of a file's attribute is kept in the cache
    directory's fakeid.cache for files whose ctime is settled: the next run
    reads no attribute (strace shows none), and a change another tool makes
    between runs (a new ctime) is seen."""
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    area = tmp_path / "a"
    area.mkdir()
    (area / "f").write_text("")
    (area / "d").mkdir()
    time.sleep(2.5)  # the cache file takes files whose ctime lies 2 s before the run
    # %Z: statx asks for the ctime (the key), as ls -l's does; stat(2) always has it
    show = ["sh", "-c", 'cd "$1"; stat -c "%n %u:%g %a %Z" f d | cut -d" " -f1-3', "sh", str(area)]
    db = str(tmp_path / "db")
    reads = []
    for _ in range(2):
        log = tmp_path / "strace"
        traced = run(["strace", "-f", "-qq", "-e", "trace=lgetxattr,getxattr", "-o", str(log)] +
                     zv_argv(show, platform, ["--fake-root", "--fake-db=" + db]), env=env)
        assert traced.stdout == "f 0:0 644\nd 0:0 755\n", traced
        reads.append(log.read_text().count("user.containers.override_stat"))
    assert (cache / "zvisor" / "fakeid.cache").exists()
    assert reads[0] >= 2 and reads[1] == 0, reads
    for name, value in (("f", "5:6:0600:file"), ("d", "7:8:0700:dir")):
        os.setxattr(area / name, "user.containers.override_stat", value.encode())
    changed = fake(show, platform, db=db, env=env)
    assert changed.stdout == "f 5:6 600\nd 7:8 700\n", changed
    os.removexattr(area / "f", "user.containers.override_stat")
    back = fake(show, platform, db=db, env=env)
    assert back.stdout == "f 0:0 644\nd 7:8 700\n", back


def test_filesystem_without_xattrs(tmp_path):
    """ramfs has no user xattrs: every record goes to the database."""
    mnt = Path(user_tmp(USER)) / "ramfs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "ramfs", "ramfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount ramfs here")
    try:
        os.chmod(mnt, 0o755)
        for mode in ("own", "nodes", "links"):
            for user in USERS:
                native_dir, zv_dir = mnt / ("n" + mode + str(user)), mnt / ("z" + mode + str(user))
                native_dir.mkdir()
                zv_dir.mkdir()
                if user:
                    zvtest.chown_tree(str(zv_dir), user)
                native = run([built("fakefiles"), mode, str(native_dir)], cwd=str(native_dir))
                db = os.path.join(scratch(tmp_path, user, "db" + mode), "owners.db")
                zv = fake([reachable(built("fakefiles"), user), mode, str(zv_dir)], None, user, db, cwd=str(zv_dir))
                assert_same(native, zv, "fakefiles %s on ramfs as %s" % (mode, user or "root"))
    finally:
        subprocess.run(["umount", str(mnt)])


# --- real programs -------------------------------------------------------------------

PY = r"""
import os, stat, sys
d = sys.argv[1]
p = os.path.join(d, "f"); open(p, "w").close()
os.chown(p, 1234, 5678); st = os.stat(p); print("chown", st.st_uid, st.st_gid)
os.symlink("f", os.path.join(d, "l")); os.lchown(os.path.join(d, "l"), 1, 2)
st = os.lstat(os.path.join(d, "l")); print("lchown", st.st_uid, st.st_gid, stat.filemode(st.st_mode))
os.mknod(os.path.join(d, "tty"), stat.S_IFCHR | 0o620, os.makedev(4, 1)); st = os.stat(os.path.join(d, "tty"))
print("mknod", stat.filemode(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev))
print("ids", os.getuid(), os.geteuid(), os.getresgid(), os.getgroups())
os.setgroups([5]); os.setgid(5); os.setuid(1000)
print("dropped", os.getresuid(), os.getresgid(), os.getgroups())
try:
    os.chown(p, 0, 0)
except PermissionError as e:
    print("chown as user:", e.errno)
"""


@pytest.mark.parametrize("user", USERS)
def test_python_os(user, tmp_path):
    script = shared_file("t.py", PY)
    ndir, zdir = scratch(tmp_path, None, "n"), scratch(tmp_path, user, "z")
    native = run(["python3", script, ndir])
    assert native.returncode == 0 and "mknod crw------- 4 1" in native.stdout, native
    zv = fake(["python3", script, zdir], None, user, os.path.join(scratch(tmp_path, user, "db"), "o.db"))
    assert_same(native, zv, "python3 as %s" % (user or "root"))


OTHERS = r"""
until_ok() { n=0; until eval "$1" || [ $n -ge 100 ]; do sleep 0.05; n=$((n+1)); done; }
sleep 5 & p=$!
python3 -c 'import ctypes, os, time
os.setgid(4322); os.setgroups([7]); os.setuid(4321)
ctypes.CDLL(None).prctl(15, b"ready", 0, 0, 0)  # PR_SET_NAME
time.sleep(5)' & q=$!
python3 -c 'import os; os.setgid(4322); os.setuid(4321); os.execvp("sleep", ["sleep", "5"])' & r=$!
until_ok '[ "$(cat /proc/$p/comm)" = sleep ]'
until_ok '[ "$(cat /proc/$q/comm)" = ready ]'
until_ok '[ "$(cat /proc/$r/comm)" = sleep ]'
echo child; grep -E '^(Uid|Gid):' /proc/$p/status
pgrep -u root -P $$ -x sleep | grep -qx $p && echo found by pgrep -u root
ps -o user= -p $p
echo setuid; grep -E '^(Uid|Gid|Groups|CapEff):' /proc/$q/status /proc/$q/task/$q/status | sed "s/$q/Q/g"
echo exec; grep -E '^(Uid|Gid|CapEff):' /proc/$r/status
pgrep -u 4321 -P $$ | sort -n | tr '\n' ' ' | sed "s/$q/Q/; s/$r/R/"; echo
python3 -c 'import ctypes, sys
for p in sys.argv[1:]:  # capget of each: its effective set
    h, d = (ctypes.c_uint32 * 2)(0x20080522, int(p)), (ctypes.c_uint32 * 6)()
    print("capget", ctypes.CDLL(None).capget(h, d), "%08x%08x" % (d[3], d[0]))' $p $q $r
kill $p $q $r; wait
"""


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("opts", [("--fake-root",), ("--fake-root", "--exec=host")], ids=["inexec", "hostexec"])
def test_other_processes_ids(opts, user):
    """Another process's /proc/PID/status shows its virtual ids, as the
    run's processes publish them: a child of the fake root is root to
    pgrep -u and ps; one that changed its ids shows them, also after an
    exec (the host's: the table's fd carried); capget of each gives the
    capabilities its status shows."""
    script = shared_file("others.sh", OTHERS)
    native = run(["sh", script])
    assert native.returncode == 0 and "found by pgrep -u root" in native.stdout, native
    assert "Uid:\t4321\t4321\t4321\t4321" in native.stdout.split("exec")[1], native.stdout
    zv = fake(["sh", script], None, user, opts=opts)
    assert_same(native, zv, "another process's ids as %s (%s)" % (user or "root", " ".join(opts)))


PROC_OWNERS = r"""
until_ok() { n=0; until eval "$1" || [ $n -ge 100 ]; do sleep 0.05; n=$((n+1)); done; }
owners() { stat -c '%n %u:%g' "$@" | sed "s/$q/Q/g; s/$r/R/g; s/$t/T/g"; }
python3 -c 'import os; os.setgid(4322); os.setuid(4321); os.execvp("sleep", ["sleep", "5"])' & r=$!
python3 -c 'import ctypes, os, sys, time, threading
l = ctypes.CDLL(None)
os.setegid(4322); os.seteuid(4321)
print("dumpable after seteuid", l.prctl(3, 0, 0, 0, 0))
s = [os.stat(p) for p in ("/proc/self", "/proc/self/status", "/proc/self/task/%d" % os.getpid())]
print("self", *["%d:%d" % (x.st_uid, x.st_gid) for x in s], flush=True)
sys.stdin.readline()
l.prctl(4, 1, 0, 0, 0)
print("dumpable", l.prctl(3, 0, 0, 0, 0), flush=True)
threading.Thread(target=time.sleep, args=(5,)).start()
l.prctl(15, b"ready", 0, 0, 0)
time.sleep(5)' < fifo & q=$!
exec 3> fifo
until_ok '[ "$(cat /proc/$r/comm)" = sleep ]'
until_ok 'grep -q ^State:.S /proc/$q/status && [ "$(stat -c %u /proc/$q)" != 0 ]'
echo "setuid, then exec"; owners /proc/$r /proc/$r/status /proc/$r/task/$r /proc/$r/fd
echo "seteuid: not dumpable"; owners /proc/$q /proc/$q/status /proc/$q/task /proc/$q/task/$q /proc/$q/task/$q/status /proc/$q/attr /proc/$q/net
echo >&3
until_ok '[ "$(cat /proc/$q/comm)" = ready ]'
t=$(ls /proc/$q/task | grep -vx $q)
echo "dumpable again"; owners /proc/$q/status /proc/$q/task/$t /proc/$q/task/$t/status /proc/$q/maps
python3 -c 'import os, sys; print("fstat", "%d:%d" % (lambda s: (s.st_uid, s.st_gid))(os.fstat(os.open(sys.argv[1], os.O_RDONLY))))' /proc/$q/status
kill $q $r; wait
"""


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("opts", [("--fake-root",), ("--fake-root", "--exec=host")], ids=["inexec", "hostexec"])
def test_other_processes_proc_owners(opts, user, tmp_path):
    """stat of a process's /proc/PID entries gives the owner it has in the
    view: its directories its effective ids, its other entries those too
    while it is dumpable, else root (a uid change makes it not dumpable,
    an exec with its ids equal and PR_SET_DUMPABLE dumpable again, as
    PR_GET_DUMPABLE says); not the run's start identity for all."""
    script = shared_file("procowners.sh", PROC_OWNERS)
    ndir, zdir = scratch(tmp_path, None, "n"), scratch(tmp_path, user, "z")
    for d in (ndir, zdir):
        os.mkfifo(os.path.join(d, "fifo"))
        if user:
            shutil.chown(os.path.join(d, "fifo"), user)
    native = run(["sh", script], cwd=ndir)
    assert native.returncode == 0 and "/proc/R/status 4321:4322" in native.stdout, native
    assert "/proc/Q 4321:4322\n/proc/Q/status 0:0" in native.stdout, native.stdout
    zv = fake(["sh", script], None, user, opts=opts, cwd=zdir)
    assert_same(native, zv, "owners of another process's /proc entries as %s (%s)" % (user or "root", " ".join(opts)))


AUDIT = r"""
import errno, socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)  # NETLINK_AUDIT
s.sendto(struct.pack("=IHHII", 20, 1100, 5, 1, 0) + b"test", (0, 0))  # AUDIT_USER, REQUEST|ACK
ln, typ, fl, seq, pid, err = struct.unpack("=IHHIIi", s.recv(100)[:20])
print(typ, errno.errorcode.get(-err, err))
"""


def test_audit_ack_as_user_namespace_root(tmp_path):
    """An audit message from a fake root is refused as a root in a user
    namespace is told (ECONNREFUSED, which sudo and login pass over without
    a word), not with the host's EPERM (sudo: "unable to send audit
    message")."""
    script = shared_file("audit.py", AUDIT)
    zv = fake(["python3", script], None, USER)
    assert zv.returncode == 0 and zv.stdout.split() == ["2", "ECONNREFUSED"], zv.stdout + zv.stderr


# --- checkpoint and restore ---------------------------------------------------------

@pytest.mark.parametrize("user", USERS)
def test_checkpoint_keeps_ids(user, tmp_path):
    """The virtual ids are kernel memory, saved with the process: a restored
    process goes on as the user it dropped to, root its saved uid, and its
    records (the database's mapping and fd are re-made) still read."""
    from crharness import Running
    ndir, zdir = scratch(tmp_path, None, "n"), scratch(tmp_path, user, "z")
    native = run([built("fakeids"), "cr", ndir])
    get("fakeids").run("cr").check(native)
    zv = reachable(zvtest.ZVISOR, user)
    img = os.path.join(scratch(tmp_path, user, "img"), "img")
    db = os.path.join(scratch(tmp_path, user, "db"), "owners.db")
    g = Running([zv, "run", "--fake-root", "--fake-db", db, "--", reachable(built("fakeids"), user), "cr", zdir],
                cwd=zdir, as_user=user)
    try:
        assert g.wait_for(lambda out: out.count("\n") >= 5), g.result_text()
        ck = run([zv, "checkpoint", str(g.pid), img], user=user)
        assert ck.returncode == 0, ck
        before = g.finish()
    finally:
        g.kill()
    after = run([zv, "restore", img], user=user, cwd=zdir)
    assert_same(native, after._replace(stdout=before.stdout + after.stdout),
                "fakeids cr, checkpointed and restored as %s" % (user or "root"))


# --- the command line ----------------------------------------------------------------

@pytest.mark.parametrize("args,status,message", [
    (["--ids", "root"], 2, "zvisor: --ids: 'root' is not UID:GID (numbers)"),
    (["--ids=1:"], 2, "zvisor: --ids: '1:' is not UID:GID (numbers)"),
    (["--fake-db="], 2, "zvisor: --fake-db: no file given"),
    (["--fake-db=x"], 2, "zvisor: --fake-db needs --fake-root or --ids"),
    (["--fake-db-only"], 2, "zvisor: --fake-db-only needs --fake-root or --ids"),
])
def test_bad_options(args, status, message):
    res = run([zvtest.ZVISOR, "run"] + args + ["--", "true"])
    assert res.returncode == status and res.stderr.startswith(message + "\n"), res


def test_bad_database(tmp_path):
    not_db = tmp_path / "not.db"
    not_db.write_text("hello\n")
    res = run([zvtest.ZVISOR, "run", "--fake-root", "--fake-db", str(not_db), "--", "true"])
    assert res.returncode == 2 and res.stderr == "zvisor: --fake-db: %s: not a zvisor ownership database\n" % not_db
    assert not_db.read_text() == "hello\n"


def test_help_names_options():
    out = run([zvtest.ZVISOR, "run", "--help"]).stdout
    for opt in ("--fake-root", "--ids UID:GID", "--fake-db FILE", "--fake-db-only"):
        assert opt in out, opt
