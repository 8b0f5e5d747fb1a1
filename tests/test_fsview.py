"""`zvisor run --root DIR`: the guest's own root filesystem (kernel/fsview/).

Each test builds a small root (tests/fsviewroot.py: busybox-static applets,
static C and Go programs, the host's libc for a dynamic one) and runs a
script in it under zvisor on each platform; where the suite runs as root it
also runs it under chroot with /proc, /dev and /sys mounted (the oracle) and
the outputs must match. The leak probe (tests/guests/leakprobe.c) asks every
path-taking call for host-only and root-only files; test_probe_covers_sysent
makes a path call added to sysent without a probe case fail."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from fsviewroot import dynamic_root, leak_trees, run_chroot, snapshot, tiny_root, busybox_is_static
from zvtest import PLATFORMS, REPO, ZVISOR, guest, run_zv, run_native, assert_same, TEST_USER, run, chown_tree, zv_argv

pytestmark = pytest.mark.skipif(not busybox_is_static(), reason="busybox-static is not installed")


def zv_root(root, argv, platform=None, opts=(), **kw):
    return run_zv(argv, platform, ["--root", str(root)] + list(opts), **kw)


def same_as_chroot(root, argv, zv):
    """The oracle, when the suite runs as root: the same under chroot."""
    if TEST_USER:
        return
    native = run_chroot(root, argv)
    if native is not None:
        assert_same(native, zv, "chroot vs zvisor --root")


# --- the leak probe --------------------------------------------------------------

def sysent_path_rows():
    """The names of sysent's rows whose fsview column is not empty."""
    text = (REPO / "kernel/sys/sysent.c").read_text()
    names = set()
    for m in re.finditer(r"^\tROW\((\w+), .*?(PATH1|PATH2|FSV\()", text, re.M):
        names.add(m.group(1))
    for m in re.finditer(r"^\t\[\d+\] = \{.*(PATH1|PATH2|FSV\().*/\* (\w+)", text, re.M):
        names.add(m.group(2))
    return names


@pytest.mark.native_only
def test_probe_covers_sysent():
    """Every row with a path (sysent's fsview column) has a case in the leak
    probe, and the probe has no case for a call without one."""
    listed = subprocess.run([guest("leakprobe.static"), "--list"], capture_output=True, text=True,
                            check=True).stdout.split()
    rows = sysent_path_rows()
    assert len(rows) > 80, rows
    assert rows - set(listed) == set(), "path calls the leak probe does not ask"
    assert set(listed) - rows == set(), "probed calls sysent does not mark as taking a path"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_leakprobe(platform, tmp_path):
    root, host = leak_trees(tmp_path)
    if TEST_USER:
        chown_tree(tmp_path, TEST_USER)  # as the run will: not the probe's change
    before = snapshot(host)
    res = zv_root(root, ["/r/prog", str(host)], platform, timeout=120)
    lines = res.stdout.splitlines()
    bad = [l for l in lines if not l.endswith(": ok")]
    assert bad == ["0 problems"], res.stdout + res.stderr
    assert res.returncode == 0
    listed = subprocess.run([guest("leakprobe.static"), "--list"], capture_output=True, text=True).stdout.split()
    assert [l.split(":")[0] for l in lines[:-1]] != [] and set(l.split(":")[0] for l in lines[:-1]) == set(listed)
    assert snapshot(host) == before, "the host-only tree changed"


# --- symlinks, .., binds, the working directory ---------------------------------

SYMLINKS = r'''
cd /tmp
mkdir -p a/b && echo in-a > a/f
ln -s /etc/passwd abs; head -1 abs
ln -s ../../../../../../../etc/os-release esc; head -1 esc
head -1 /../../../../etc/os-release
cd a/b; head -1 ../../abs; cd /tmp
ln -s a/b rel; cd -P rel && pwd -P; cd /tmp
ln -s loop2 loop1; ln -s loop1 loop2; cat loop1 2>&1 | sed 's/^.*: //'
ln -s /tmp/a dira; ls dira/; ls dira/../ | head -3
readlink abs; readlink -f esc; realpath rel
test -e dangling || echo no-dangling
ln -s nowhere dangling; echo made > dangling; cat nowhere
stat -c '%F' abs abs/ 2>&1 | sed 's/^.*: //'
cat a/f/ 2>&1 | sed 's/^.*: //'
mkdir -p deep/x/y/z; cd deep/x/y/z; cd -P ../../../../../../../..; pwd -P
cd /proc/self/cwd && pwd -P; cd /; ls -d /proc/self/root/tmp/a
L=/tmp/dddddddddddddddddddddddddddddddddddddddddddddddddd/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee/f
mkdir -p ${L%/f}; echo long-target > $L; ln -s $L /tmp/long; test -r /tmp/long && cat /tmp/long
'''

SYMLINKS_OUT = [
    "root:x:0:0:root:/root:/bin/sh", 'PRETTY_NAME="zvisor tiny root"', 'PRETTY_NAME="zvisor tiny root"',
    "root:x:0:0:root:/root:/bin/sh", "/tmp/a/b", "Too many levels of symbolic links", "b", "f", "a", "abs",
    "dira", "/etc/passwd", "/etc/os-release", "/tmp/a/b", "no-dangling", "made", "symbolic link",
    "Not a directory", "Not a directory", "/", "/", "/proc/self/root/tmp/a", "long-target", "",
]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_symlinks(platform, tmp_path):
    """Absolute and relative symlinks, ones that climb out with .., loops,
    dangling ones made by a write, trailing slashes, /proc/self/root."""
    argv = ["/bin/sh", "-c", SYMLINKS]
    res = zv_root(tiny_root(tmp_path / "root"), argv, platform)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n") == SYMLINKS_OUT, res.stdout
    same_as_chroot(tiny_root(tmp_path / "oracle"), argv, res)


def host_tree(base):
    """A host directory to bind: hostdir/x, hostdir/sub/y, and a file."""
    d = base / "hostdir"
    (d / "sub").mkdir(parents=True)
    (d / "b").mkdir()
    (d / "x").write_text("host-x\n")
    (d / "sub" / "y").write_text("host-y\n")
    f = base / "hostfile"
    f.write_text("host-file\n")
    return d, f


BINDS = r'''
cat /mnt/h/x /mnt/h/sub/y /etc/hostname
ls /mnt/h; cd /mnt/h/sub && pwd && cd ../.. && pwd; ls /mnt/h/..
cat /mnt/h/sub/../x; cd /mnt/h; cd -P ..; pwd -P
cat /deep/new/dir/x; ls /deep/new; ls -d /deep  # made up, listing what they hold
cat /mnt/h/b/x
read dev mp rest < /etc/mtab; echo $mp; readlink /etc/mtab
rm /etc/hostname 2>&1 | sed 's/^.*: //'; rmdir /mnt/h 2>&1 | sed 's/^.*: //'
mv /mnt/h /mnt/g 2>&1 | sed 's/^.*: //'
ln /mnt/h/x /tmp/l 2>&1 | sed 's/^.*: //'; ln /etc/hostname /tmp/l 2>&1 | sed 's/^.*: //'
ln /mnt/h/x /deep/new/dir/l 2>&1 | sed 's/^.*: //'; ln /mnt/h/nothere /tmp/l 2>&1 | sed 's/^.*: //'
ln /mnt/h/x /mnt/h/sub/l && rm /mnt/h/sub/l && echo one-mount
'''


@pytest.mark.parametrize("platform", PLATFORMS)
def test_binds(platform, tmp_path):
    """A directory and a file bound over the root, one nested in another,
    one below directories the root lacks; .. from a bind's top; /etc/mtab,
    a symlink of the root into the bound /proc; a mountpoint is busy."""
    root = tiny_root(tmp_path / "root")
    (root / "mnt/h").mkdir(parents=True)
    (root / "etc/hostname").write_text("root's\n")
    os.symlink("../proc/self/mounts", root / "etc/mtab")
    hd, hf = host_tree(tmp_path)
    opts = ["--bind", "%s:/mnt/h" % hd, "--bind", "%s:/etc/hostname" % hf, "--bind", "%s:/deep/new/dir" % hd,
            "--bind", "%s:/mnt/h/b" % hd]
    res = zv_root(root, ["/bin/sh", "-c", BINDS], platform, opts)
    assert res.stdout.split("\n") == [
        "host-x", "host-y", "host-file", "b", "sub", "x", "/mnt/h/sub", "/mnt", "h", "host-x", "/mnt",
        "host-x", "dir", "/deep", "host-x", "/", "../proc/self/mounts", "Device or resource busy",
        "Device or resource busy", "Device or resource busy", "Invalid cross-device link",
        "Invalid cross-device link", "Invalid cross-device link", "No such file or directory", "one-mount", "",
    ], res.stdout + res.stderr
    assert os.path.exists(hf) and os.path.isdir(hd / "sub")


def test_no_default_binds(tmp_path):
    root = tiny_root(tmp_path / "root")
    res = zv_root(root, ["/bin/sh", "-c", "find /proc /dev /sys | wc -l; test -e /proc/self || echo none"],
                  opts=["--no-default-binds"])
    assert res.stdout == "3\nnone\n", res.stdout + res.stderr


@pytest.mark.parametrize("preset", ["host", "build", "none"])
def test_bind_presets(preset, tmp_path):
    """--bind-preset: the host's files a networked root needs (PRoot's -R
    and -S), over the root's own; none: not even /proc."""
    root = tiny_root(tmp_path / "root")
    (root / "etc/resolv.conf").write_text("root's\n")
    mark = tempfile.NamedTemporaryFile(dir="/tmp", prefix="zvpreset")
    os.chmod(mark.name, 0o644)
    res = zv_root(root, ["/bin/sh", "-c", "cat /etc/resolv.conf; ls %s; test -e /proc/self && echo proc" % mark.name],
                  opts=["--bind-preset=" + preset])
    if preset == "none":
        assert res.stdout == "root's\n", res.stdout + res.stderr
    else:
        with open("/etc/resolv.conf") as f:
            assert res.stdout == f.read() + mark.name + "\nproc\n", res.stdout + res.stderr


@pytest.mark.parametrize("spec, err", [
    (["--root", "/nonexistent/r"], "zvisor: --root: /nonexistent/r: No such file or directory\n"),
    (["--root", "/etc/passwd"], "zvisor: --root: /etc/passwd: Not a directory\n"),
    (["--bind", "/nonexistent:/x"], "zvisor: --bind: /nonexistent: No such file or directory\n"),
    (["--bind", ":/x"], "zvisor: --bind: ':/x' is not HOST[:GUEST]\n"),
    (["--bind-preset=cloud"], "zvisor: --bind-preset: unknown preset (host, build, none): 'cloud'\n"),
    (["--cwd", "/nonexistent"], "zvisor: --cwd: /nonexistent: No such file or directory\n"),
    (["--root"], "zvisor: --root: no value given\n"),
])
def test_bad_options(spec, err, tmp_path):
    """A root, bind or working directory that cannot be had: one line, status 2."""
    root = tiny_root(tmp_path / "root")
    argv = [str(ZVISOR), "run"] + (spec if spec[0] == "--root" else ["--root", str(root)] + spec)
    res = run(argv + (["--", "/bin/true"] if spec != ["--root"] else []), user=TEST_USER)
    assert (res.returncode, res.stderr) == (2, err)


CWD = "pwd; cd ..; pwd; readlink /proc/self/cwd"


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("exec_mode", ["inprocess", "host"])
def test_cwd(platform, exec_mode, tmp_path):
    """--cwd, and without it the host's working directory when the view
    reaches it (in the root or a bind), else /; the view's root and cwd
    survive an exec, in this process or the host's."""
    root = tiny_root(tmp_path / "root")
    (root / "home/u/w").mkdir(parents=True)
    hd, _ = host_tree(tmp_path)
    argv = ["/bin/sh", "-c", "exec /bin/sh -c '%s'" % CWD]
    opts = ["--exec=" + exec_mode]
    after_exec = zv_root(root, ["/bin/sh", "-c", "cd /home/u && exec /bin/sh -c 'readlink /proc/self/cwd; "
                                "readlink /proc/self/root; ls /proc/self/root/home'"], platform, opts)
    assert after_exec.stdout == "/home/u\n/\nu\n", after_exec.stdout + after_exec.stderr
    assert zv_root(root, argv, platform, opts + ["--cwd", "/home/u/w"]).stdout == "/home/u/w\n/home/u\n/home/u\n"
    assert zv_root(root, argv, platform, opts + ["--cwd", "etc"]).stdout == "/etc\n/\n/\n"
    assert zv_root(root, argv, platform, opts, cwd=str(root / "home/u")).stdout == "/home/u\n/home\n/home\n"
    assert zv_root(root, argv, platform, opts + ["--bind", "%s:/b" % hd],
                   cwd=str(hd / "sub")).stdout == "/b/sub\n/b\n/b\n"
    assert zv_root(root, argv, platform, opts, cwd=str(tmp_path)).stdout == "/\n/\n/\n"


PROCLINKS = r'''
for l in exe root cwd; do readlink /proc/self/$l; done
(sleep 2; :) & readlink /proc/$!/exe; kill $!
i=0; while [ $i -lt 80 ]; do /bin/true; i=$((i+1)); done; sh -c 'readlink /proc/$PPID/exe'
cd /etc; exec 3</etc/passwd
for l in self/fd/3 $$/cwd $$/exe thread-self/root; do readlink /proc/$l; done
cat /proc/self/root/etc/os-release | head -1; ls /proc/self/cwd/passwd
ls -l /proc/self/fd/3 | sed 's/.* -> //'
'''


@pytest.mark.parametrize("platform", PLATFORMS)
def test_proc_links(platform, tmp_path):
    """/proc/self/exe, root, cwd and fd/* name the guest's paths; going
    through root stays in the view; a fork child's exe is its parent's
    program until it execs, and a parent's stays known after many
    children came and went (fsview/shared.c)."""
    root = tiny_root(tmp_path / "root")
    argv = ["/bin/sh", "-c", PROCLINKS]
    res = zv_root(root, argv, platform)
    assert res.stdout.split("\n") == [
        "/usr/bin/busybox", "/", "/", "/usr/bin/busybox", "/usr/bin/busybox", "/etc/passwd", "/etc", "/usr/bin/busybox", "/",
        'PRETTY_NAME="zvisor tiny root"', "/proc/self/cwd/passwd", "/etc/passwd", "",
    ], res.stdout + res.stderr
    same_as_chroot(tiny_root(tmp_path / "oracle"), argv, res)


CHANGES = r'''
mkdir -p /tmp/d/sub /tmp/a /tmp/b; touch /tmp/a/x /tmp/b/y
test -e /tmp/d/sub/g || echo no-g
ln -s /tmp/a /tmp/l; test -e /tmp/l/x && echo x-through-l
/bin/mv /tmp/d /tmp/e; /bin/mkdir -p /tmp/d/sub; /bin/touch /tmp/d/sub/g
test -e /tmp/d/sub/g && echo g-in-new-d
/bin/rm /tmp/l; /bin/ln -s /tmp/b /tmp/l
test -e /tmp/l/y && echo y-through-new-l
/bin/rm -r /tmp/d/sub; test -e /tmp/d/sub || echo sub-gone
/bin/sh -c 'cd /tmp/d && /bin/mkdir sub && cd sub && pwd'
'''


@pytest.mark.parametrize("platform", ["stubs", "seccomp"])
def test_changes_seen(platform, tmp_path):
    """Directories and symlinks another process of the guest renames,
    removes or makes again are seen at once (the cache of the view's
    directories starts afresh)."""
    res = zv_root(tiny_root(tmp_path / "root"), ["/bin/sh", "-c", CHANGES], platform)
    assert res.stdout.split() == ["no-g", "x-through-l", "g-in-new-d", "y-through-new-l", "sub-gone", "/tmp/d/sub"], \
        res.stdout + res.stderr


def same_in_root(tmp_path, name, platform, opts=()):
    """Guest NAME (its static build) on an empty work directory natively,
    and in a tiny root under --root on the root's /tmp/w: the same output."""
    (tmp_path / "w").mkdir()
    native = run_native([guest(name + ".static"), tmp_path / "w"])
    assert native.returncode == 0 and "FAIL" not in native.stdout, native.stdout + native.stderr
    root = tiny_root(tmp_path / "root")
    shutil.copy(guest(name + ".static"), root / "usr/bin" / name)
    (root / "tmp/w").mkdir()
    if TEST_USER:
        chown_tree(root / "tmp/w", TEST_USER)
    zv = zv_root(root, ["/usr/bin/" + name, "/tmp/w"], platform, opts)
    assert_same(native, zv, "native vs zvisor --root")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_changes_in_process(platform, tmp_path):
    """The process itself renames, removes and remakes directories, replaces
    symlinks and takes search permission away, then uses the same paths
    again, absolute and relative (tests/guests/fschange.c): as natively."""
    same_in_root(tmp_path, "fschange", platform)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("exec_mode", ["inprocess", "host"])
def test_held_directory_fd(platform, exec_mode, tmp_path):
    """Names in a directory the process opened by its absolute path (a walk
    may start at the process's own fd, DESIGN "Walks from the guest's
    directory fd"): the fd closed and its number reused, dup2'd over, the
    directory renamed or replaced by a symlink, search permission taken from
    its parent, a thread, a child sharing the fd table, a fork and a vfork
    child, an exec, a deep tree, fds up to RLIMIT_NOFILE
    (tests/guests/dirfdwalk.c): as natively."""
    same_in_root(tmp_path, "dirfdwalk", platform, ["--exec=" + exec_mode])


def host_calls(argv):
    """The host calls of argv and its children (strace -f -c's total)."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".strace") as log:
        res = run(["strace", "-f", "-qq", "-c", "-o", log.name] + [str(a) for a in argv])
        assert res.returncode == 0, res.stderr
        m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d+\s+)?total$", log.read(), re.M)
        return int(m.group(1))


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_directory_walk_host_calls(tmp_path):
    """ls -lR names each entry by its directory's path text and a '/': under
    --root that costs the host calls it costs natively, per directory
    (strace; trees of 20 and 40 directories, the difference per directory),
    with the view's own fds neither opened nor moved for them."""
    root = tiny_root(tmp_path / "root")
    native_tops = []
    for n in (20, 40):
        for top in (root / "tmp" / ("t%d" % n), tmp_path / ("t%d" % n)):
            for i in range(n):
                (top / ("d%02d" % i)).mkdir(parents=True)
                for f in ("f1", "f2"):
                    (top / ("d%02d" % i) / f).write_text("")
        native_tops.append(tmp_path / ("t%d" % n))
    if TEST_USER:
        chown_tree(root, TEST_USER)

    def zv(n):
        return zv_argv(["ls", "-lR", "/tmp/t%d" % n], "stubs", ["--root", str(root)])
    host_calls(zv(20))  # the site cache, warm
    view = [host_calls(zv(n)) for n in (20, 40)]
    native = [host_calls([root / "usr/bin/busybox", "ls", "-lR", top]) for top in native_tops]
    per_dir = (view[1] - view[0]) / 20, (native[1] - native[0]) / 20
    assert per_dir[0] <= per_dir[1] + 0.5, "host calls per directory (view, native): %s; totals %s %s" % (
        per_dir, view, native)


def exec_root(tmp_path, name="root"):
    root = tiny_root(tmp_path / name)
    dynamic_root(root)
    (root / "usr/bin/s1").write_text("#!/bin/sh\necho script $0 \"$@\"\n")
    (root / "usr/bin/s2").write_text("#!/usr/bin/s1 arg\n")
    (root / "usr/bin/noexec").write_text("#!/bin/sh\necho no\n")
    (root / "usr/bin/nointerp").write_text("#!/usr/bin/missing\n")
    for f in ("s1", "s2", "nointerp"):
        os.chmod(root / "usr/bin" / f, 0o755)
    return root


EXEC = r'''
s1 a b; s2 x; /usr/bin/s2 y
hello | head -1; hello.static | head -1
/lib64/ld-linux-x86-64.so.2 /usr/bin/hello | head -1
/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --verify /usr/bin/hello; echo verify $?
noexec; echo $?; nointerp; echo $?; missing; echo $?
goguest exec | head -3
sh -c 'exit 7'; echo $?
sh -c 'kill -SEGV $$'; echo $?
env -i PATH=/usr/bin sh -c 'readlink /proc/self/exe'
'''


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("exec_mode", ["inprocess", "host"])
def test_exec(platform, exec_mode, tmp_path):
    """Programs of the root: its own ld.so and libc for a dynamic one
    (PT_INTERP through the root's absolute /lib64 symlink), `ld.so PROG`,
    #! scripts and nested ones, static C and Go, PATH lookup, the errnos of
    a failed exec, exit statuses and deaths by signal; by either exec."""
    argv = ["/bin/sh", "-c", EXEC]
    res = zv_root(exec_root(tmp_path), argv, platform, ["--exec=" + exec_mode])
    lines = res.stdout.split("\n")
    assert lines[:9] == ["script /usr/bin/s1 a b", "script /usr/bin/s1 arg /usr/bin/s2 x",
                         "script /usr/bin/s1 arg /usr/bin/s2 y", "hello, world", "hello, world", "hello, world",
                         "verify 0", "126", "127"], res.stdout + res.stderr
    same_as_chroot(exec_root(tmp_path, "oracle"), argv, res)


def same_guest_in_root(tmp_path, name, platform):
    """Guest NAME (its static build), which works in /tmp, natively and as
    /usr/bin/NAME in a tiny root: the same output."""
    native = run_native([guest(name + ".static")])
    root = tiny_root(tmp_path / "root")
    shutil.copy(guest(name + ".static"), root / "usr/bin" / name)
    assert_same(native, zv_root(root, ["/usr/bin/" + name], platform), "native vs zvisor --root")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_exec_errors(platform, tmp_path):
    """execveat's errnos in the root (LTP execveat02): a bad dirfd is EBADF
    and the working directory (AT_FDCWD, "", AT_EMPTY_PATH) EACCES, not the
    ENOENT of a /proc/self/fd name the view finds nothing at
    (tests/guests/execcheck.c)."""
    same_guest_in_root(tmp_path, "execcheck", platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_magic_links(platform, tmp_path):
    """/proc magic links in the root: openat2's resolve flags, and linkat
    of an O_TMPFILE file through /proc/self/fd/N, which follows it to the
    file's mount (LTP openat03: EXDEV, /proc being a bind of its own)
    (tests/guests/magiclinks.c)."""
    same_guest_in_root(tmp_path, "magiclinks", platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_static_go(platform, tmp_path):
    """A static Go program in the root: goroutines, os/exec of the root's
    programs, files, signals."""
    root = tiny_root(tmp_path / "root")
    for mode in ("chan", "exec", "files", "signal"):
        res = zv_root(root, ["/usr/bin/goguest", mode], platform)
        native = run([guest("goguest"), mode], user=TEST_USER)
        assert (res.stdout, res.returncode) == (native.stdout, native.returncode), mode + "\n" + res.stderr


def test_run_program_lookup(tmp_path):
    """zvisor run's PROGRAM is looked up in the guest's PATH, in the root."""
    root = tiny_root(tmp_path / "root")
    res = run([str(ZVISOR), "run", "--root", str(root), "--", "readlink", "/proc/self/exe"], user=TEST_USER,
              env=dict(os.environ, PATH="/usr/bin"))
    assert (res.stdout, res.returncode) == ("/usr/bin/busybox\n", 0), res.stderr
    res = run([str(ZVISOR), "run", "--root", str(root), "--", "python3"], user=TEST_USER)
    assert (res.returncode, res.stderr) == (127, "zvisor: python3: No such file or directory\n")


@pytest.mark.parametrize("platform", ["stubs", "sud"])
def test_checkpoint_restore(platform, tmp_path):
    """A program checkpointed under --root goes on after restore in its view:
    the root, its working directory, /proc/self/cwd (docs/CHECKPOINT.md)."""
    import crharness
    root = tiny_root(tmp_path / "root")
    prog = "/usr/bin/%s.static" % "fsloop"  # tiny_root copies the guest there
    argv = [str(ZVISOR), "run", "--platform=" + platform, "--root", str(root), "--", prog, "30"]
    r = crharness.Running(argv, as_user=TEST_USER)
    try:
        r.wait_first_line()
        assert r.wait_for(lambda out: out.count("\n") >= 5)
        crharness.checkpoint(r.pid, tmp_path / "img", as_user=TEST_USER)
        first = r.finish()
    finally:
        r.kill()
    rest = crharness.zv("restore", tmp_path / "img", as_user=TEST_USER, cwd=str(tmp_path))
    lines = (first.stdout + rest.stdout).splitlines()
    want = ['%d PRETTY_NAME="zvisor tiny root" /etc /etc usr/bin' % i for i in range(30)]
    assert lines == want, first.stderr + rest.stderr
    assert rest.returncode == 0


def test_trace_shows_guest_paths(tmp_path):
    """zvisor trace prints the guest's paths, as strace in a chroot would:
    arguments, results (getcwd, readlink) and -y's fd paths."""
    root = tiny_root(tmp_path / "root")
    res = run([str(ZVISOR), "trace", "-f", "-y", "-e", "trace=openat,getcwd,readlink,chdir,close", "--root",
               str(root), "--", "/bin/sh", "-c", "cd /etc && cat os-release >/dev/null && readlink /proc/self/cwd"],
              user=TEST_USER)
    assert res.returncode == 0, res.stderr
    assert str(root) not in res.stderr, res.stderr
    text = re.sub(r"  +", " ", res.stderr)
    for want in ('chdir("/etc") = 0', 'openat(AT_FDCWD, "os-release", O_RDONLY) = 3',
                 'close(3</etc/os-release>) = 0', 'readlink("/proc/self/cwd", "/etc", 80) = 4'):
        assert want in text, res.stderr


def test_time_and_threads(tmp_path):
    """--time and threads compose with --root: a fixed clock, and files made
    by threads and by fork and vfork children."""
    root = tiny_root(tmp_path / "root")
    res = zv_root(root, ["/bin/sh", "-c", "date +%Y; goguest files; (cd /tmp && touch a b) & wait; ls /tmp"],
                  opts=["--time=freeze=2001-02-03T04:05:06Z"])
    native = run([guest("goguest"), "files"], user=TEST_USER)
    assert res.stdout == "2001\n" + native.stdout + "a\nb\n", res.stderr
