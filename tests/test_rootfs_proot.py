"""The classes of PRoot's own tests (its test/ folder), as tests of our own,
run through `zvisor proot` (PRoot's spellings: -r, -b, -m, -w, -0, -i) on
the Debian root of test_rootfs.py, on the stubs, sud and seccomp platforms:

  binds      a directory, a file over a file, a path the root lacks, through
             a symbolic link of the root, nested and repeated binds, the host's
             / at a guest path, a host symbolic link
  cwd        -w absolute, relative, inside a bind, missing; chdir and fchdir
             then getcwd; a file as directory; a removed working directory
  /proc      /proc/self/exe and its /.. forms, fd links reached through
             symbolic links, /proc/PID/cmdline of a script, TracerPid
  symlinks   PRoot's matrix of files, directories and links to both, at three
             depths, with the terminators /, /. and /.. (chdir, cat, readlink);
             dangling targets; a script reached through a link
  exec       PATH lookups (empty, unset, wrong), ./ and ../ names under -w,
             argv[0], #! lines: nested, long, empty, with only spaces, naming
             themselves, climbing with ../; scripts without x; ld.so --list
  identity   -0 and -i UID:GID: the get*id family, the auxv, chown and chroot
             as the identity allows, set-id programs under -i

Where PRoot's semantics are those of a real chroot with bind mounts, the
oracle is that (rootfsharness.py: chroot as root, binds mounted, /proc only
where -b /proc asks; one run per command serves every platform); where they are not (a bind at a path the root lacks,
the identity under -i), the test states what PRoot's test expects."""
import os
import shutil
import tempfile

import pytest

import rootfsharness as h
import zvtest
from rootfsharness import sh
from zvtest import Result, assert_same

PLATFORMS = h.PLATFORMS


@pytest.fixture
def pair():
    return h.shared_pair()


@pytest.fixture(scope="module")
def host():
    """A host tree, root's, readable by all: a.txt, sub/b.txt, link ->
    a.txt, other/c.txt."""
    d = tempfile.mkdtemp(prefix="zvisor-proot-")
    os.chmod(d, 0o755)
    for name, text in (("a.txt", "host a\n"), ("sub/b.txt", "host b\n"), ("other/c.txt", "host c\n")):
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    os.symlink("a.txt", os.path.join(d, "link"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def proot(pair, platform, args, argv, environ=None, host_cwd="/"):
    """zvisor proot --platform=P ARGS ARGV as the user; {R} in ARGS is the
    user's copy of the root."""
    args = [a.replace("{R}", str(pair.zv)) for a in args]
    cmd = [str(zvtest.ZVISOR), "proot", "--platform=" + platform] + args + [str(a) for a in argv]
    h.need_view()
    cmd = zvtest.as_user(cmd, h.USER)
    cmd[0] = shutil.which(cmd[0])  # the program's PATH may be empty: not setpriv's
    return zvtest.run(cmd, env=h.env() if environ is None else environ, cwd=host_cwd, timeout=h.TIMEOUT)


def same(pair, platform, args, argv, binds=(), cwd="/", environ=None, normalize=None):
    n = pair.native_once(argv, binds, cwd, environ, default_binds=False)
    z = proot(pair, platform, args, argv, environ)
    if normalize:
        n = Result(normalize(n.stdout), normalize(n.stderr), n.returncode)
        z = Result(normalize(z.stdout), normalize(z.stderr), z.returncode)
    assert_same(n, z, "zvisor proot %s %s (platform %s)" % (" ".join(args), " ".join(map(str, argv)),
                                                          platform))
    return n, z


def expect(res, stdout=None, status=0, what=""):
    assert res.returncode == status and (stdout is None or res.stdout == stdout), (
        "%s: expected %s and stdout %r, got %s\n--- stdout:\n%s--- stderr:\n%s"
        % (what, zvtest.status_text(status), stdout, zvtest.status_text(res.returncode),
           res.stdout, res.stderr[-2000:]))


# --- binds ---------------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_binds(pair, host, platform):
    pair.mkdir("/mnt/hd")
    pair.mkdir("/mnt/hd2")
    # a directory and its contents (test-55fd1da5); a file over a file
    # (test-6fb08ce1); owners aside (a user's ids, PRoot's without -0)
    same(pair, platform, ["-r", "{R}", "-b", host + ":/mnt/hd", "-b", host + "/a.txt:/etc/fstab"],
         sh("ls -a1F /mnt/hd; stat -c '%n %a %F %s' /mnt/hd/*; cat /mnt/hd/link /mnt/hd/sub/b.txt "
            "/etc/fstab; readlink /mnt/hd/link"),
         binds=[(host, "/mnt/hd"), (host + "/a.txt", "/etc/fstab")])
    # the deeper bind wins (test-8e5fa256)
    same(pair, platform, ["-r", "{R}", "-b", host + ":/mnt/hd", "-b", host + "/other:/mnt/hd/sub"],
         sh("ls /mnt/hd/sub; cat /mnt/hd/sub/c.txt"),
         binds=[(host, "/mnt/hd"), (host + "/other", "/mnt/hd/sub")])
    # the host's / at a guest path, and -w inside it (test-0238c7f1)
    res = proot(pair, platform, ["-r", "{R}", "-m", "/:/hostfs", "-w", "/hostfs" + host],
                ["rootprobe.static", "getcwd", "cat", "a.txt", "cat", "/hostfs" + host + "/sub/b.txt"])
    expect(res, "getcwd: /hostfs%s\ncat a.txt: host a\ncat /hostfs%s/sub/b.txt: host b\n" % (host, host),
           what="-m /:/hostfs")
    # a host symbolic link as the host path (test-305ae31d, test-6b5a254a)
    link = host + ".link"
    if not os.path.lexists(link):
        os.symlink(host + "/a.txt", link)
    res = proot(pair, platform, ["-r", "{R}", "-b", link + ":/etc/motd"], ["cat", "/etc/motd"])
    expect(res, "host a\n", what="a bind of a host symbolic link")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("first,second", [("/mnt/hd", "/mnt/hd2"), ("/mnt/hd2", "/mnt/hd")])
def test_one_directory_bound_twice(pair, host, first, second, platform):
    """One host directory at two places, in either order; -w, chdir and
    fchdir into each (test-5467b986)."""
    pair.mkdir("/mnt/hd")
    pair.mkdir("/mnt/hd2")
    same(pair, platform, ["-r", "{R}", "-b", host + ":" + first, "-b", host + ":" + second, "-w", second],
         ["rootprobe.static", "getcwd", "chdir", first, "getcwd", "fchdir", second, "getcwd", "readdir", "."],
         binds=[(host, first), (host, second)], cwd=second)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bind_where_the_root_has_nothing(pair, host, platform):
    """A bind at a guest path whose directories the root lacks: they appear
    (test-654decce, test-aaaaaaaa: -b /bin/true:/NEW runs /NEW)."""
    res = proot(pair, platform, ["-r", "{R}", "-b", host + "/a.txt:/new/dir/file"],
                ["rootprobe.static", "cat", "/new/dir/file", "readdir", "/new/dir"])
    expect(res, "cat /new/dir/file: host a\nreaddir /new/dir: . d, .. d, file f\n",
           what="a bind under missing directories")
    res = proot(pair, platform, ["-r", "{R}", "-b", "%s/usr/bin/true:/zvtrue" % pair.zv], ["/zvtrue"])
    expect(res, "", what="a bind of a program at a new path, run there")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bind_through_a_symlink_of_the_root(pair, host, platform):
    """Debian's /var/run is a link to /run: a bind at /var/run/X lands at
    /run/X, seen through both (test-67972fbe)."""
    res = proot(pair, platform, ["-r", "{R}", "-b", host + ":/var/run/zvhost"],
                sh("cat /var/run/zvhost/a.txt /run/zvhost/sub/b.txt"))
    expect(res, "host a\nhost b\n", what="a bind through the root's /var/run -> /run")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bind_spellings(pair, host, platform):
    """-b as PRoot's new_binding reads it: a host path of $NAME is that
    variable's value; a relative guest path is relative to the host's
    working directory; a host path that does not exist is left out with a
    warning, and the program runs (PRoot goes on without it)."""
    environ = h.env(ZVHOSTDIR=host)
    res = proot(pair, platform, ["-r", "{R}", "-b", "$ZVHOSTDIR:/mnt/hd"], ["cat", "/mnt/hd/a.txt"],
                environ=environ)
    expect(res, "host a\n", what="-b '$ZVHOSTDIR:/mnt/hd'")
    res = proot(pair, platform, ["-r", "{R}", "-b", "$ZVHOSTDIR"], ["cat", host + "/sub/b.txt"],
                environ=environ)
    expect(res, "host b\n", what="-b '$ZVHOSTDIR'")
    res = proot(pair, platform, ["-r", "{R}", "-b", host + "/a.txt:zvrel.txt"], ["cat", "/usr/zvrel.txt"],
                host_cwd="/usr")
    expect(res, "host a\n", what="-b HOST:relative from /usr")
    res = proot(pair, platform, ["-r", "{R}", "-b", "/zv-no-such-path:/mnt/hd", "-b", host + ":/mnt/hd2"],
                ["cat", "/mnt/hd2/a.txt"])
    expect(res, "host a\n", what="-b of a missing host path, then another")
    assert "/zv-no-such-path" in res.stderr, res.stderr
    res = proot(pair, platform, ["-v", "-1", "-r", "{R}", "-b", "/zv-no-such-path"], ["true"])
    expect(res, "", what="-v -1 -b of a missing host path")
    assert res.stderr == "", res.stderr


# --- cwd -------------------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_cwd(pair, host, platform):
    probe = ["rootprobe.static", "getcwd"]
    # -w, and $PWD (test-7601199b, test-1cd9d8f9)
    same(pair, platform, ["-r", "{R}", "-w", "/usr/share"], sh("pwd; echo $PWD; /bin/pwd -P"),
         cwd="/usr/share")
    # a relative -w is relative to the host's working directory (test-5bed7142)
    res = proot(pair, platform, ["-r", "{R}", "-w", "usr/lib"], probe)
    expect(res, "getcwd: /usr/lib\n", what="-w usr/lib from /")
    # a -w the root lacks: a warning, then / (test-5467b986)
    res = proot(pair, platform, ["-r", "{R}", "-w", "/does/not/exist"], probe)
    expect(res, "getcwd: /\n", what="a missing -w")
    # chdir to a file, and under -w (test-5467b986)
    same(pair, platform, ["-r", "{R}", "-w", "/usr/bin"],
         ["rootprobe.static", "chdir", "/usr/bin/true", "fchdir", "/usr/bin/true", "chdir", "true",
          "getcwd", "chdir", "..", "getcwd", "chdir", "../../../..", "getcwd"], cwd="/usr/bin")
    # the working directory removed under the program (test-5bed7142)
    same(pair, platform, ["-r", "{R}"],
         sh("mkdir -p /tmp/gone; cd /tmp/gone; rmdir /tmp/gone; /bin/pwd -P; echo $?; "
            "rootprobe.static getcwd"))


# --- /proc ---------------------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_proc(pair, platform):
    """/proc/self/exe and its forms (test-99999999), fd links through
    symbolic links (test-a4d7ed70), a script's cmdline (test-b6df3cbe),
    TracerPid (test-3624be91)."""
    pair.write("/tmp/cmdline.sh", "#!/bin/sh\ncat /proc/$$/cmdline | tr '\\0' ' '; echo\n", 0o755)
    same(pair, platform, ["-r", "{R}", "-b", "/proc"],
         sh("readlink /proc/self/exe; readlink /proc/1/../self/exe; sh -c 'readlink /proc/$$/exe'; "
            "readlink /proc/self/exe/; echo $?; readlink /proc/self/exe/..; echo $?; "
            "readlink /proc/self/exe/../exe; echo $?; readlink /proc/self/fd/0; "
            "rm -rf /tmp/pfd; mkdir /tmp/pfd; ln -s /proc/self/fd /tmp/pfd/fd; "
            "ln -s /tmp/pfd/fd/0 /tmp/pfd/stdin; ls /tmp/pfd/stdin; echo OK | cat /tmp/pfd/stdin; "
            "cd /tmp && sh -c ./cmdline.sh; grep TracerPid /proc/self/status"),
         binds=[("/proc", "/proc")])


# --- symlinks -------------------------------------------------------------------------

# test-11111111: regular files, directories and links to both, at three
# depths (the third missing), each path with each terminator.
MATRIX = r"""set -u
d=/tmp/matrix; rm -rf $d; mkdir -p $d; cd $d
mk() { touch r$1; mkdir -p d$1; ln -fs r$1 rl$1; ln -fs d$1 dl$1; }
mk 1; (cd d1 && mk 2)
for a in r1 d1 rl1 dl1; do for b in r2 d2 rl2 dl2 r3 d3 rl3 dl3; do for c in / /. /.. ""; do
  x=$a/$b$c
  (cd $x 2>/dev/null); cdr=$?
  cat $x >/dev/null 2>&1; catr=$?
  readlink $x >/dev/null 2>&1; rlr=$?
  echo "$x $cdr $catr $rlr"
done; done; done"""


@pytest.mark.parametrize("platform", PLATFORMS)
def test_symlinks(pair, platform):
    same(pair, platform, ["-r", "{R}"], sh(MATRIX))
    # dangling targets and a file as a directory (test-bbbbbbbb)
    same(pair, platform, ["-r", "{R}"],
         sh("cd /tmp; rm -f nowhere; ln -sf /nowhere /tmp/; ln -sf /nowhere /tmp/; echo $?; "
            "ln -sf /etc/fstab/nowhere /tmp/; echo $?; touch t2; ln -sf /tmp/nope t1; ln t2 t1; echo $?; "
            "readlink t1 nowhere"))
    # a script through a link names the link in $0 (test-713b6910)
    pair.write("/tmp/dollar0", "#!/bin/sh\necho $0\n", 0o755)
    same(pair, platform, ["-r", "{R}"],
         sh("ln -sf /tmp/dollar0 /tmp/dollar0.link; /tmp/dollar0.link; cd /tmp && ./dollar0.link"))


# --- exec ----------------------------------------------------------------------------

def env_path(path):
    e = h.env()
    if path is None:
        del e["PATH"]
    else:
        e["PATH"] = path
    return e


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("path,cwd,prog", [
    ("", "/", "true"), ("", "/bin", "true"), ("", "/bin", "./true"), ("", "/", "bin/true"),
    ("", "/", "bin/./true"), ("", "/", "../bin/true"), ("", "/", "/true"),
    (None, "/", "true"), (None, "/bin", "./true"), ("/nib", "/", "true"), ("/bin", "/", "true"),
    ("/usr/local/bin", "/", "rootprobe.static"),
], ids=["empty", "empty-w", "empty-dot", "empty-rel", "empty-dotrel", "empty-dotdot", "missing",
        "unset", "unset-dot", "wrong", "bin", "local"])
def test_exec_lookup(pair, platform, path, cwd, prog):
    """How the command is found (test-03969e70, test-6d1e2650,
    test-b94dd86a): the root's PATH, names relative to -w."""
    args = ["-r", "{R}", "-w", cwd]
    same(pair, platform, args, [prog, "argv"] if prog.startswith("root") else [prog],
         cwd=cwd, environ=env_path(path), normalize=_not_found)


def _not_found(text):
    # the two report a missing program in their own words: the status says it
    return "" if "No such file" in text or "not found" in text else text


SHEBANGS = r"""set -e; d=/tmp/shebang; rm -rf $d; mkdir $d; cd $d
printf '#!/usr/local/bin/rootprobe.static argv\n' > argv0; chmod +x argv0
printf '#! %s/inner -a\n' $d > outer; printf '#! /bin/echo -b\n' > inner; chmod +x outer inner
long=$(printf 'X%.0s' $(seq 1 200)); printf '#!/bin/echo %s\n' $long > long; chmod +x long
printf '#!//../../../../../../../../../../../../../../../../usr/bin/echo XXX\n' > climb; chmod +x climb
printf '#!/../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../usr/bin/echo XXX\n' > toolong; chmod +x toolong
printf '#!\n' > empty; printf '#!            \n' > spaces; chmod +x empty spaces
printf '#!%s/self\n' $d > self; chmod +x self
printf '#!/bin/true\n' > noexec; chmod -x noexec"""


EXECVP = ("zvisor runs PROGRAM as execve(2) does (a file the kernel cannot execute: 126), not with "
          "execvp(3)'s retry by /bin/sh that PRoot's test expects")
SHEBANG_CASES = [
    (["rootprobe.static", "argv"], None), (["/usr/local/bin/rootprobe.static", "argv"], None),
    (["/tmp/shebang/argv0", "x"], None), (["/tmp/shebang/outer", "o"], None), (["/tmp/shebang/long"], None),
    (["/tmp/shebang/climb"], None), (["/tmp/shebang/toolong"], None), (["/tmp/shebang/empty"], EXECVP),
    (["/tmp/shebang/spaces"], EXECVP), (["/tmp/shebang/self"], None), (["/tmp/shebang/noexec"], None),
]


_shebangs_made = set()


def _shebang_params():
    for prog, why in SHEBANG_CASES:
        name = prog[0].rsplit("/", 1)[-1]
        for shell in (False, True):
            # from a shell, the shell makes execvp's retry itself
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why and not shell else []
            yield pytest.param(prog, shell, marks=marks, id="%s-%s" % (name, "from-sh" if shell else "direct"))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("prog,shell", list(_shebang_params()))
def test_shebangs(pair, prog, shell, platform):
    """argv[0] through PATH and #! (test-092c5e26), nested #! with
    arguments (test-311b7a95), long and odd #! lines (test-691786c8), a
    script without x (test-1743dd3d); each as the command itself and
    through a shell of the root."""
    if (id(pair), platform) not in _shebangs_made:  # the scripts, once in each copy
        same(pair, platform, ["-r", "{R}"], sh(SHEBANGS))
        _shebangs_made.add((id(pair), platform))
    if shell:
        same(pair, platform, ["-r", "{R}"], sh('"$@"; echo status $?') + ["sh"] + prog)
    else:
        same(pair, platform, ["-r", "{R}"], prog, normalize=_exec_error)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ld_so_list(pair, platform):
    """ldd's way (test-8a83376a): ld.so --list of a root's program."""
    same(pair, platform, ["-r", "{R}"], sh("/lib64/ld-linux-x86-64.so.2 --list /bin/true | "
                                            "sed 's/ (0x[0-9a-f]*)//'"))


def _exec_error(text):
    # zvisor's and env's words for a program that cannot run differ: the
    # exit status (126, 127) says which
    return "" if text.startswith(("zvisor: ", "/usr/bin/env: ")) else text


# --- identity -------------------------------------------------------------------------

IDS = ("id -u; id -g; id -G; rootprobe.static ids; LD_SHOW_AUXV=1 /bin/true | grep -E '^AT_E?[UG]ID:'; "
       "grep -E '^(Uid|Gid):' /proc/self/status")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_identity(pair, platform):
    """-0 and -i (test-82ba4ba1, test-230f47ch): what the get*id family,
    the auxv and /proc/self/status say; chown and chroot as the identity
    allows; set-id programs under -i (test-getresid)."""
    same(pair, platform, ["-r", "{R}", "-b", "/proc", "-0"], sh(IDS), binds=[("/proc", "/proc")])
    res = proot(pair, platform, ["-r", "{R}", "-b", "/proc", "-i", "123:456"], sh(IDS))
    expect(res, "123\n456\n456\nids: uid=123,123,123 gid=456,456,456 groups= auxv=123,123,456,456\n"
           "AT_UID:               123\nAT_EUID:              123\nAT_GID:               456\n"
           "AT_EGID:              456\nUid:\t123\t123\t123\t123\nGid:\t456\t456\t456\t456\n",
           what="-i 123:456")
    res = proot(pair, platform, ["-r", "{R}", "-i", "123:456"],
                ["rootprobe.static", "chown", "/root", "0", "0", "chroot", "/", "chroot", "/tmp"])
    expect(res, "chown /root: EPERM\nchroot /: EPERM\nchroot /tmp: EPERM\n", status=1,
           what="chown and chroot under -i 123:456")
    res = proot(pair, platform, ["-r", "{R}", "-0"],
                ["rootprobe.static", "chown", "/root", "0", "0", "chroot", "/", "stat", "/root"])
    expect(res, "chown /root: ok\nchroot /: ok\nstat /root: mode=040700 uid=0 gid=0 nlink=2\n",
           what="chown and chroot under -0")
    # set-uid and set-gid programs owned by root, run under -i (test-getresid)
    for name, mode in (("suid", "4755"), ("sgid", "2755")):
        res = proot(pair, platform, ["-r", "{R}", "-0"],
                    sh("mkdir -p /tmp/setid && cp /usr/local/bin/rootprobe.static /tmp/setid/%s && "
                       "chown 0:0 /tmp/setid/%s && chmod %s /tmp/setid/%s" % (name, name, mode, name)))
        expect(res, "", what="installing a set-id probe under -0")
    res = proot(pair, platform, ["-r", "{R}", "-i", "1000:1000"], sh("/tmp/setid/suid ids; /tmp/setid/sgid ids"))
    expect(res, "ids: uid=1000,0,0 gid=1000,1000,1000 groups= auxv=1000,0,1000,1000\n"
           "ids: uid=1000,1000,1000 gid=1000,0,0 groups= auxv=1000,1000,1000,0\n",
           what="set-id programs under -i 1000:1000")
    # the pair is shared: test_rootfs.py::test_debian_ownership lists every
    # set-id file of the root, and the native copy has none of these
    expect(proot(pair, platform, ["-r", "{R}", "-0"], ["rm", "-rf", "/tmp/setid"]), "",
           what="removing the set-id probes")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_root_id_overrides_permissions(pair, platform):
    """Under -0 a directory without permissions is no obstacle, as for root
    (test-1fedd9a3)."""
    same(pair, platform, ["-r", "{R}", "-0"],
         sh("rm -rf /tmp/locked; mkdir -p /tmp/locked/in; chmod 0 /tmp/locked/in /tmp/locked; "
            "touch /tmp/locked/in/file && ls /tmp/locked/in; stat -c %a /tmp/locked /tmp/locked/in; "
            "chmod -R 755 /tmp/locked"))
