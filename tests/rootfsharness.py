"""The --root tests' harness: a Debian minbase root filesystem (built once by
scripts/rootfs.sh and kept as a tarball in its cache), fresh copies of it,
and the two ways of running a command inside a copy:

  natively (the oracle): as root, under `chroot`, in a mount namespace of its
  own (unshare -m) where /dev, /proc and /sys are mounted inside the copy, as
  fakechroot's tests run their oracle; nothing reaches the host's mount table;

  under zvisor: `zvisor run --root COPY --fake-root` as an ordinary user
  (nobody, or ZV_TEST_USER), on a copy of its own that the user owns, in
  which the ownership Debian's tarball records was restored by extracting it
  with `tar --same-owner` under `zvisor --fake-root` (the user's copy holds
  it in extended attributes).

Both runs get the same environment (ENV) and working directory, and their
stdout, stderr and exit status or signal are compared after the test's
normalisation. The tests need root (for chroot, and to run as the user)."""
import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import zvtest
from zvtest import Result

REPO = zvtest.REPO
CACHE = Path(os.environ.get("ZV_ROOTFS_CACHE", "/var/cache/zvisor-tests"))
# The platforms every --root scenario runs on.
PLATFORMS = ["stubs", "sud", "seccomp"]
USER = zvtest.TEST_USER or "nobody"
# Where the local package repository (the cache's repo/) appears inside the
# root: /etc/apt/sources.list there names it (scripts/rootfs.sh).
REPO_GUEST = "/srv/zvisor-repo"
TIMEOUT = 300


def env(**more):
    """The environment of both runs: a fixed one, as `env -i` would give a
    login shell of root, plus the stubs platform's cache for the user (a host
    path the guest never uses)."""
    e = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LC_ALL": "C",
        "DEBIAN_FRONTEND": "noninteractive",
        "XDG_CACHE_HOME": os.path.join(zvtest.user_area(USER), "cache"),
    }
    e.update(more)
    return e


# --- the cache ------------------------------------------------------------------

def _script(*args):
    return subprocess.run(["sh", str(REPO / "scripts" / "rootfs.sh")] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


_tarballs = {}


def tarball(flavor="base"):
    """The cached tarball's path, built first if missing (as root; the script
    locks, so parallel test processes wait for one build)."""
    if flavor in _tarballs:
        return _tarballs[flavor]
    if os.geteuid() != 0:
        pytest.skip("the --root tests need root (chroot is their oracle; the zvisor "
                    "runs are made as %s)" % USER)
    got = _script("path", flavor)
    if got.returncode != 0:
        built = _script("build", flavor)
        got = _script("path", flavor)
        if got.returncode != 0:
            pytest.fail("scripts/rootfs.sh build %s failed:\n%s" % (flavor, built.stderr[-3000:]))
    _tarballs[flavor] = Path(got.stdout.strip())
    return _tarballs[flavor]


def repo():
    tarball()
    return Path(_script("repo").stdout.strip())


# --- what this zvisor can do ------------------------------------------------------

_known = {}


def has_option(*opt):
    """Whether `zvisor run OPT... -- /bin/true` takes the option (its help
    may not name it yet)."""
    if opt not in _known:
        res = zvtest.run([zvtest.ZVISOR, "run"] + list(opt) + ["--", "/bin/true"]) \
            if zvtest.zvisor_available() else None
        _known[opt] = res is not None and "unknown option" not in res.stderr
    return _known[opt]


def need_view():
    if not has_option("--root", "/"):
        pytest.skip("this zvisor has no --root")
    if not has_option("--fake-root"):
        pytest.skip("this zvisor has no --fake-root")


# --- copies -----------------------------------------------------------------------

def _area():
    """A directory of the user's for one copy: the copy, and beside it the
    ownership database (COPY.owners.db) of the records a file cannot hold
    itself (a symbolic link's)."""
    d = tempfile.mkdtemp(dir=zvtest.user_area(USER), prefix="rootfs-")
    os.chmod(d, 0o755)
    zvtest.chown_tree(d, USER)
    return Path(d)


def native_copy(flavor="base"):
    """A fresh copy for the oracle: extracted by root, owners and device
    nodes as in the tarball."""
    d = _area() / "native"
    d.mkdir()
    subprocess.run(["tar", "--numeric-owner", "-xpf", str(tarball(flavor)), "-C", str(d)], check=True)
    return d


def zv_copy(flavor="base"):
    """A fresh copy for zvisor's runs, the user's: extracted by the user
    under `zvisor run --fake-root` with tar --same-owner, so that the owners,
    set-id bits and device nodes are kept as fakeid records them."""
    d = _area() / "zvisor"
    d.mkdir()
    zvtest.chown_tree(str(d), USER)
    tar = ["tar", "--numeric-owner", "--same-owner", "-xpf", str(tarball(flavor)), "-C", str(d)]
    # the database --root will use later for this copy: the one beside it
    fake = ["--fake-root", "--fake-db", str(d) + ".owners.db"]
    res = zvtest.run(zvtest.as_user([zvtest.ZVISOR, "run"] + fake + ["--"] + tar, USER),
                     env=env(), cwd=str(d), timeout=TIMEOUT)
    if res.returncode != 0:
        pytest.fail("extracting the root as %s under zvisor --fake-root failed (%s):\n%s"
                    % (USER, zvtest.status_text(res.returncode), res.stderr[-3000:]))
    return d


def remove(d):
    shutil.rmtree(d.parent if d.name in ("native", "zvisor") else d, ignore_errors=True)


# --- running ----------------------------------------------------------------------

def _binds(binds):
    """[(host, guest)] from 'HOST' or 'HOST:GUEST' strings or pairs."""
    out = []
    for b in binds:
        if isinstance(b, str):
            host, _, guest = b.partition(":")
            b = (host, guest or host)
        out.append((str(b[0]), str(b[1])))
    return out


# The oracle's mounts: what zvisor binds by default, then the test's binds.
_NATIVE_SH = r'''set -e
r=$1; cwd=$2; defaults=$3; shift 3
if [ "$defaults" = 1 ]; then
	mount --rbind /dev "$r/dev"
	mount -t proc proc "$r/proc"
	mount --rbind /sys "$r/sys"
fi
while [ "$1" != -- ]; do mount --bind "$1" "$r$2"; shift 2; done
shift
exec chroot "$r" /usr/bin/env -i -C "$cwd" "$@"'''


def native_argv(root, argv, binds=(), cwd="/", environ=None, default_binds=True):
    environ = env() if environ is None else environ
    cmd = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", _NATIVE_SH,
           "sh", str(root), cwd, "1" if default_binds else "0"]
    for host, guest in _binds(binds):
        cmd += [host, guest]
    return cmd + ["--"] + ["%s=%s" % kv for kv in sorted(environ.items())] + [str(a) for a in argv]


def run_native(root, argv, binds=(), cwd="/", environ=None, input=None, timeout=TIMEOUT,
               default_binds=True):
    """argv as root under chroot into root, in cwd, with the binds (and
    /dev, /proc and /sys unless default_binds is false)."""
    return zvtest.run(native_argv(root, argv, binds, cwd, environ, default_binds), input=input,
                      timeout=timeout, cwd="/")


def zv_argv(root, argv, platform, binds=(), cwd="/", fake_root=True, opts=(), default_binds=True):
    cmd = [str(zvtest.ZVISOR), "run"] + zvtest.platform_opts(platform)
    cmd += ["--root", str(root)]
    if not default_binds:
        cmd.append("--no-default-binds")
    if fake_root:
        cmd.append("--fake-root")
    for host, guest in _binds(binds):
        cmd += ["--bind", host if host == guest else "%s:%s" % (host, guest)]
    if cwd is not None:
        cmd += ["--cwd", cwd]
    return cmd + list(opts) + ["--"] + [str(a) for a in argv]


def run_zv(root, argv, platform, binds=(), cwd="/", environ=None, input=None, fake_root=True,
           opts=(), timeout=TIMEOUT, host_cwd=None, default_binds=True):
    """argv under `zvisor run --root root [--fake-root]` as the user."""
    need_view()
    environ = env() if environ is None else environ
    cmd = zvtest.as_user(zv_argv(root, argv, platform, binds, cwd, fake_root, opts, default_binds),
                         USER)
    cmd[0] = shutil.which(cmd[0])  # the program's PATH may be empty: not setpriv's
    return zvtest.run(cmd, input=input, env=environ, timeout=timeout, cwd=host_cwd or "/")


def compare(native_root, zv_root, argv, platform, normalize=None, expect_native=None,
            binds=(), cwd="/", environ=None, input=None, opts=(), timeout=TIMEOUT,
            stderr=True, default_binds=True, native=None):
    """argv natively in native_root and under zvisor in zv_root: the same
    stdout, stderr (unless stderr=False) and exit status. normalize(text)
    applies to both stdouts and stderrs. native: the native Result, when the
    caller has it already. Returns (native, zvisor)."""
    if native is None:
        native = run_native(native_root, argv, binds, cwd, environ, input, timeout, default_binds)
    if expect_native:
        expect_native(native)
    zv = run_zv(zv_root, argv, platform, binds, cwd, environ, input, opts=opts, timeout=timeout,
                default_binds=default_binds)
    n, z = native, zv
    if normalize:
        n = Result(normalize(n.stdout), normalize(n.stderr), n.returncode)
        z = Result(normalize(z.stdout), normalize(z.stderr), z.returncode)
    if not stderr:
        n, z = n._replace(stderr=""), z._replace(stderr="")
    zvtest.assert_same(n, z, "command: %s (platform %s)" % (" ".join(map(str, argv)), platform))
    return native, zv


def sh(script):
    return ["/bin/sh", "-c", script]


# --- a pair of copies -------------------------------------------------------------

# The guests put in every copy, at /usr/local/bin/NAME: the probe in its
# builds (static, static-pie, musl and dynamic against the root's own libc)
# and the static Go program.
GUESTS = ["rootprobe", "rootprobe.static", "rootprobe.static-pie", "rootprobe.musl", "rootgo"]


def install_guests(root, user=None):
    dest = root / "usr" / "local" / "bin"
    for g in GUESTS:
        src = Path(zvtest.guest(g))
        if not src.exists():
            pytest.fail("%s is not built: make -C tests/guests" % src)
        shutil.copy2(src, dest / g)
        os.chmod(dest / g, 0o755)
        if user:
            uid, gid = zvtest.user_ids(user)
            os.lchown(dest / g, uid, gid)


def as_owner(path, user=None):
    """Hand a file made by root in a copy to its owner (the user for
    zvisor's copies), as if the one who runs in the copy had made it."""
    if user:
        zvtest.chown_tree(str(path), user)


class Pair:
    """A native copy and a zvisor copy of the same root, each with the
    guests; mkdir/write make the same file in both."""

    def __init__(self, flavor="base"):
        need_view()
        self.native = native_copy(flavor)
        self.zv = zv_copy(flavor)
        install_guests(self.native)
        install_guests(self.zv, USER)
        self.natives = {}  # the oracle's result by command

    def remove(self):
        remove(self.native)
        remove(self.zv)

    def both(self):
        return ((self.native, None), (self.zv, USER))

    def mkdir(self, guest_path):
        for root, user in self.both():
            p = root / guest_path.lstrip("/")
            p.mkdir(parents=True, exist_ok=True)
            as_owner(p, user)

    def write(self, guest_path, text, mode=0o644):
        for root, user in self.both():
            p = root / guest_path.lstrip("/")
            p.write_text(text)
            os.chmod(p, mode)
            as_owner(p, user)

    def native_once(self, argv, binds=(), cwd="/", environ=None, default_binds=True):
        """The oracle's run of a command, made once for every platform: the
        commands leave the same state whichever platform comes first."""
        key = (tuple(map(str, argv)), tuple(map(tuple, _binds(binds))), cwd,
               tuple(sorted((environ or {}).items())), default_binds)
        if key not in self.natives:
            self.natives[key] = run_native(self.native, argv, binds, cwd, environ,
                                           default_binds=default_binds)
        return self.natives[key]

    def compare(self, argv, platform, binds=(), cwd="/", environ=None, default_binds=True, **kw):
        native = self.native_once(argv, binds, cwd, environ, default_binds)
        return compare(self.native, self.zv, argv, platform, binds=binds, cwd=cwd, environ=environ,
                       default_binds=default_binds, native=native, **kw)


_shared = []


def shared_pair():
    """The pair of copies that the scenario modules share in this test
    process (each works in directories of its own), removed at exit."""
    if not _shared:
        _shared.append(Pair())
        atexit.register(_shared[0].remove)
    return _shared[0]
