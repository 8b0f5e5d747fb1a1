"""A Debian 12 minbase root under `zvisor run --root R --fake-root` as an
ordinary user, against the same command under chroot as root (the oracle:
rootfsharness.py). Each scenario runs on the stubs, sud and seccomp
platforms and must print the same and exit the same:

  the root as a program sees it: ls /, os-release, the get*id family, the
    owners and set-id bits Debian's tarball records, device nodes;
  persistence across runs: chown, chmod, set-id bits, mknod, hard links and
    rename, and tar round trips;
  packages: dpkg -i of real packages with maintainer scripts (uuid-runtime
    adds a user and chowns, sudo ships a set-uid file), then apt-get
    install python3 from the local repository;
  binds (a file, a directory), --cwd, the /proc links;
  symlinks: absolute, relative, escaping with .., loops;
  exec: shebangs (nested, with arguments, through env), ld.so PROG, the
    static C probe in its builds, the dynamic one on the root's own libc,
    a static Go program;
  exit status and signals.

The two runs see the same environment; the zvisor copy is the user's, its
ownership restored by tar --same-owner under --fake-root."""
import os
import re
import shutil
import tempfile

import pytest

import rootfsharness as h
from rootfsharness import sh
from zvtest import native_ok

PLATFORMS = h.PLATFORMS


@pytest.fixture
def pair():
    """The pair of copies the scenarios share, which change nothing outside
    their own directories (/tmp/NAME-PLATFORM); the package scenarios make
    copies of their own."""
    return h.shared_pair()


# --- the root as a program sees it -------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_ls_and_os_release(pair, platform):
    pair.compare(sh("ls /; ls -a /etc | head -30; cat /etc/os-release /etc/debian_version; "
                    "ls -ln --time-style=+%F /etc/apt /usr/local"),
                 platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ids(pair, platform):
    pair.compare(sh("id; id -u; id -g; id -G; id -un; whoami; grep -E '^(Uid|Gid|Groups):' "
                    "/proc/self/status; rootprobe.static ids; rootprobe ids; "
                    "LD_SHOW_AUXV=1 /bin/true | grep -E '^AT_E?[UG]ID:'"),
                 platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_debian_ownership(pair, platform):
    """What the tarball records: set-id programs, group-owned files and
    directories, as dpkg left them."""
    pair.compare(sh("stat -c '%n %U:%G %a %F' /usr/bin/passwd /usr/bin/chage /usr/bin/expiry "
                    "/usr/bin/su /etc/shadow /etc/gshadow /var/mail /var/local /var/log /root /tmp "
                    "/usr/bin/wall /usr/sbin/unix_chkpwd; "
                    "find / -xdev \\( -perm -4000 -o -perm -2000 \\) -printf '%p %u:%g %m\\n' | sort; "
                    "find /etc /usr /var -xdev ! -user root -printf '%p %u:%g\\n' | sort"),
                 platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_device_nodes_of_the_tarball(pair, platform):
    """The root's own /dev (mmdebstrap's nodes), with no /dev bound over it."""
    pair.compare(sh("stat -c '%n %F %t:%T %U:%G %a' /dev/null /dev/zero /dev/full /dev/tty "
                    "/dev/random /dev/urandom /dev/console /dev/ptmx; ls -ln --time-style=+ /dev"),
                 platform, default_binds=False, expect_native=native_ok(0))


# --- persistence across runs -------------------------------------------------------

def two_runs(pair, platform, first, second, **kw):
    """first, then second in a new process of its own, in each copy: what
    the first changed must be what the second sees."""
    pair.compare(sh(first), platform, expect_native=native_ok(0), **kw)
    return pair.compare(sh(second), platform, expect_native=native_ok(0), **kw)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_persistence(pair, platform):
    d = "/tmp/persist-" + platform
    first = ("set -e; rm -rf {d}; mkdir {d}; cd {d}; touch f g h; mkdir dir; "
             "chown 1234:5678 f; chmod 4755 f; chown :42 g; chmod 2711 g; chown 7:7 dir; chmod 1777 dir; "
             "mknod chr c 1 3; mknod blk b 7 0; mkfifo fifo; chown 0:6 blk; chmod 660 blk; "
             "ln f f.link; mv g g.moved; chown -h 99:99 h; ln -s f sym; chown -h 3:4 sym; "
             "stat -c '%n %u:%g %a %F %t:%T %h' * | sort")
    second = ("cd {d}; stat -c '%n %u:%g %a %F %t:%T %h' * | sort; rm f.link h; "
              "stat -c '%n %u:%g %a %h' f; ls -ln --time-style=+ . | tail -n +2")
    two_runs(pair, platform, first.format(d=d), second.format(d=d))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tar_round_trip(pair, platform):
    d = "/tmp/tar-" + platform
    first = ("set -e; rm -rf {d}; mkdir -p {d}/src/sub; cd {d}/src; echo data > file; "
             "chown 1000:1000 file; chmod 640 file; touch suid; chmod 4711 suid; chown 0:5 sub; "
             "mknod null c 1 3; ln -s file link; chown -h 12:34 link; ln file hard; "
             "tar --numeric-owner -cpf ../t.tar .; tar --numeric-owner -tvf ../t.tar | "
             "awk '{{print $1, $2, $6, $7, $8}}' | sort")
    second = ("set -e; cd {d}; mkdir dst; tar --numeric-owner --same-owner -xpf t.tar -C dst; "
              "find dst -printf '%p %U:%G %m %y\\n' | sort; cat dst/file; "
              "tar --numeric-owner -cpf again.tar -C dst . && cmp -s t.tar again.tar; echo same=$?")
    two_runs(pair, platform, first.format(d=d), second.format(d=d))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cp_preserve(pair, platform):
    """cp -a and cp -p of files and directories another user owns: cp
    creates them 0700/0600, chowns, then sets the mode by writing the
    access ACL (system.posix_acl_access), which the program sees as the mode
    in the next run as in this one."""
    d = "/tmp/cp-" + platform
    first = ("set -e; rm -rf {d}; mkdir -p {d}/src/sub; cd {d}; echo x > src/sub/f; echo y > src/g; "
             "chmod 640 src/g; chmod 4755 src/sub/f; chown -R 1234:5678 src; chmod 750 src/sub; "
             "cp -a src a; cp -p src/g p; cp -pR src r; find a p r -printf '%p %U:%G %m\n' | sort")
    second = "cd {d}; find a p r -printf '%p %U:%G %m\n' | sort"
    two_runs(pair, platform, first.format(d=d), second.format(d=d))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cp_preserve_restrictive_root_files(pair, platform):
    """cp -a of root's own read-only directory and file (no record: cp's
    chown to 0:0 changes nothing, its ACL write sets the mode): root still
    writes into the copy, empties and removes it, as natively (DAC
    override), in this run and the next."""
    d = "/tmp/cpro-" + platform
    first = ("set -e; rm -rf {d}; mkdir -p {d}/src/sub; cd {d}; echo x > src/sub/f; chmod 400 src/sub/f; "
             "chmod 555 src/sub src; cp -a src a; cp -a src b; find a -printf '%p %U:%G %m\n' | sort; "
             "touch a/new a/sub/new; echo more >> a/sub/f; cat a/sub/f; rm -rf a; test ! -e a; echo gone")
    second = ("cd {d}; find b -printf '%p %U:%G %m\n' | sort; touch b/sub/new; rm -rf b src; echo gone")
    two_runs(pair, platform, first.format(d=d), second.format(d=d))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_setgid_directory_group(pair, platform):
    """A set-gid directory (chmod 2775 and its group set in the run, so the
    bit and group are zvisor's records alone): files, links, FIFOs, devices
    and directories made in it take its group, and a directory the set-gid
    bit, by absolute and relative paths, seen again in the next run."""
    d = "/tmp/sgid-" + platform
    first = ("set -e; rm -rf {d}; mkdir {d}; chmod 2775 {d}; chown :50 {d}; touch {d}/f; mkdir {d}/d; "
             "mkfifo {d}/p; ln -s f {d}/l; mknod {d}/c c 1 3; cd {d}; touch rel; mkdir -m 700 rd; "
             "mkdir d/deeper; touch d/deeper/g; find {d} -printf '%p %U:%G %m\n' | sort")
    second = "find {d} -printf '%p %U:%G %m\n' | sort"
    two_runs(pair, platform, first.format(d=d), second.format(d=d))


# --- packages ------------------------------------------------------------------------

# The native runs of the package scenarios, made once for every platform.
_native_packages = {}


def _packages_native(key, steps):
    if key not in _native_packages:
        root = h.native_copy()
        try:
            _native_packages[key] = [h.run_native(root, sh(s), binds=[(h.repo(), h.REPO_GUEST)])
                                     for s in steps]
        finally:
            h.remove(root)
    return _native_packages[key]


def packages(platform, key, steps, normalize=None):
    """Each step in a new process, in a fresh copy of the zvisor side,
    compared with the same steps natively in a fresh copy."""
    natives = _packages_native(key, steps)
    zv = h.zv_copy()
    try:
        for step, native in zip(steps, natives):
            native_ok(0)(native)
            h.compare(None, zv, sh(step), platform, binds=[(h.repo(), h.REPO_GUEST)],
                      native=native, normalize=normalize)
    finally:
        h.remove(zv)


DPKG_STEPS = [
    "dpkg -i /srv/zvisor-repo/uuid-runtime_*.deb /srv/zvisor-repo/sudo_*.deb",
    "stat -c '%n %U:%G %a' /var/lib/libuuid /usr/bin/sudo /etc/sudoers /etc/sudoers.d "
    "/usr/libexec/sudo/sudo_intercept.so; getent passwd uuidd; getent group uuidd; "
    "dpkg -s sudo uuid-runtime | grep -E '^(Package|Status)'; dpkg --verify sudo uuid-runtime; "
    "sudo -V | head -1",
    "dpkg -r uuid-runtime && SUDO_FORCE_REMOVE=yes dpkg -P sudo && ls /usr/bin/sudo /var/lib/libuuid 2>&1; "
    "getent passwd uuidd",
]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dpkg_install(platform):
    packages(platform, "dpkg", DPKG_STEPS)


def _apt_normalize(text):
    # apt's download speed line
    return re.sub(r"Fetched .* in .*", "Fetched", text)


APT_STEPS = [
    "apt-get update && apt-get install -y --no-install-recommends python3",
    "python3 -c 'import sqlite3, json, sys, os; print(sys.version_info[:2], os.getuid(), "
    "sqlite3.sqlite_version)'; stat -c '%n %U:%G %a' /usr/bin/python3.11 /usr/lib/python3.11 "
    "/usr/lib/python3/dist-packages; find /usr/lib/python3.11 -name '*.pyc' | wc -l; "
    "dpkg -l | awk '/^ii/ {print $2, $3}' | sort | md5sum",
]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_apt_get_install(platform):
    packages(platform, "apt", APT_STEPS, normalize=_apt_normalize)


# --- binds, --cwd, /proc ---------------------------------------------------------------

@pytest.fixture(scope="module")
def host_tree():
    """A host directory and a host file, root's and readable by all, that
    the root does not have."""
    d = tempfile.mkdtemp(prefix="zvisor-bind-")
    os.chmod(d, 0o755)
    os.mkdir(os.path.join(d, "sub"))
    for name, text in (("a.txt", "host a\n"), ("sub/b.txt", "host b\n")):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    os.symlink("a.txt", os.path.join(d, "link"))
    f = os.path.join(d, "motd")
    with open(f, "w") as fh:
        fh.write("the host's motd\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bind_directory_and_file(pair, host_tree, platform):
    pair.mkdir("/mnt/hostdir")
    binds = [(host_tree, "/mnt/hostdir"), (os.path.join(host_tree, "motd"), "/etc/motd")]
    # (owners aside: a host file's owner is mapped as in a user namespace,
    # the user's to the fake identity and others' to 65534)
    pair.compare(sh("cat /etc/motd; ls -A1F /mnt/hostdir; stat -c '%n %a %F %s' /mnt/hostdir/* "
                    "/etc/motd; cat /mnt/hostdir/a.txt "
                    "/mnt/hostdir/link /mnt/hostdir/sub/b.txt; readlink /mnt/hostdir/link; "
                    "cd /mnt/hostdir/sub && pwd && cd .. && pwd && cd .. && pwd; "
                    "stat -c '%n %F' /mnt/hostdir /etc/motd; ls /mnt"),
                 platform, binds=binds, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("cwd", ["/", "/usr/share/doc", "/var/lib/dpkg/info", "/root"])
def test_cwd(pair, cwd, platform):
    pair.compare(sh("pwd; /bin/pwd; /bin/pwd -P; readlink /proc/self/cwd; rootprobe.static getcwd; "
                    "echo $PWD; ls | head -5"),
                 platform, cwd=cwd, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_proc_links(pair, platform):
    pair.compare(sh("cd /etc; readlink /proc/self/root /proc/self/cwd /proc/self/exe; "
                    "readlink /proc/$$/root /proc/$$/cwd /proc/$$/exe; "
                    "exec 3</etc/hostname 4</usr/share; readlink /proc/self/fd/3 /proc/self/fd/4; "
                    "ls -l /proc/self/fd/3 | sed 's/.* -> //'; rootprobe.static exe; rootprobe exe; "
                    "grep -o '/[^ ]*libc\\.so[^ ]*' /proc/self/maps | sort -u; "
                    "cat /proc/self/cmdline | tr '\\0' ' '; echo; realpath /proc/self/cwd/.."),
                 platform, expect_native=native_ok(0))


# --- symlinks ----------------------------------------------------------------------------

SYMLINK_SETUP = ("set -e; d=/tmp/links-{p}; rm -rf $d; mkdir -p $d/dir/deep; cd $d; "
                 "echo target > dir/file; ln -s /etc/os-release abs; ln -s dir/file rel; "
                 "ln -s ../../../../../../../../etc/debian_version esc; ln -s /.. rootdotdot; "
                 "ln -s ../../../../../../../.. updir; ln -s loop2 loop1; ln -s loop1 loop2; "
                 "ln -s self self2; ln -s self2 self; ln -s $d/dir absdir; ln -s dir/deep/../file "
                 "dotdot; ln -s nothing dangling")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_symlinks(pair, platform):
    d = "/tmp/links-" + platform
    pair.compare(sh(SYMLINK_SETUP.format(p=platform)), platform, expect_native=native_ok(0))
    probe = ["rootprobe.static", "chdir", d]
    for link in ("abs", "rel", "esc", "rootdotdot", "updir", "loop1", "self", "absdir", "dotdot",
                 "dangling"):
        probe += ["readlink", link, "stat", link, "lstat", link, "open", link]
    probe += ["readdir", "updir", "readdir", "rootdotdot", "chdir", "updir", "getcwd", "chdir",
              d + "/absdir/../dir/deep/../..", "getcwd", "chdir", "/../../..", "getcwd",
              "cat", "/../../etc/hostname", "open", d + "/loop1/x", "stat", d + "/rel/x"]
    pair.compare(probe, platform)
    pair.compare(sh("cd %s; cat abs rel esc dotdot; ls rootdotdot updir | head -5; cat loop1; "
                    "readlink -f abs rel esc updir dangling absdir; realpath -e loop1; "
                    "cd updir && pwd && pwd -P; cd /; cd ..; pwd; ls | head -3" % d), platform)


# --- exec --------------------------------------------------------------------------------

EXEC_SETUP = r"""set -e; d=/tmp/exec-{p}; rm -rf $d; mkdir -p $d; cd $d
printf '#!/bin/sh\necho "sh: $0 $*"\n' > plain
printf '#!/bin/sh -e\necho "args: $0 $*"\n' > witharg
printf '#!/usr/bin/env sh\necho "env: $0 $*"\n' > viaenv
printf '#!%s/plain one\n' $d > nested
printf '#!%s/nested two\n' $d > nested2
printf '#! /usr/bin/perl -w\nprint "perl: $0 @ARGV\\n";\n' > perl
printf '#!/no/such/interpreter\n' > missing
printf '#!/bin/sh\necho not executable\n' > noexec
printf '#!../../../../../bin/sh\necho "dotdot: $0"\n' > dotdot
chmod 755 plain witharg viaenv nested nested2 perl missing dotdot; chmod 644 noexec
ln -s plain link"""


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shebangs(pair, platform):
    d = "/tmp/exec-" + platform
    pair.compare(sh(EXEC_SETUP.format(p=platform)), platform, expect_native=native_ok(0))
    for script in ("./plain a b", "./witharg a", "./viaenv x", "./nested n", "./nested2 m", "./perl p",
                   "./link l", "%s/plain abs" % d, "PATH=%s:$PATH plain onpath" % d,
                   "./missing; echo status $?", "./noexec; echo status $?",
                   "cd / && %s/dotdot; echo status $?" % d,
                   "rootprobe.static exec %s/nested2 argv0 x" % d):
        pair.compare(sh("cd %s && %s" % (d, script)), platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ld_so(pair, platform):
    pair.compare(sh("/lib64/ld-linux-x86-64.so.2 /bin/echo via ld.so; "
                    "/lib64/ld-linux-x86-64.so.2 /usr/local/bin/rootprobe exe argv; "
                    "/lib64/ld-linux-x86-64.so.2 --list /bin/ls | sed 's/ (0x[0-9a-f]*)//'; "
                    "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --verify /bin/true; echo $?"),
                 platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("probe", ["rootprobe.static", "rootprobe.static-pie", "rootprobe.musl",
                                   "rootprobe"])
def test_c_program(pair, probe, platform):
    """The probe in each build: static glibc, static-pie, static musl, and
    dynamic on the root's own ld.so and libc."""
    pair.compare([probe, "exe", "argv", "ids", "getcwd", "chdir", "/usr/lib", "getcwd",
                  "readdir", "/usr/local/bin", "stat", "/etc/passwd", "cat", "/etc/hostname",
                  "readlink", "/bin", "chroot", "/usr"], platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_go_program(pair, platform):
    pair.compare(["rootgo"], platform, expect_native=native_ok(0), cwd="/usr/share")


# --- exit status and signals ----------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("script", [
    "exit 7",
    "kill -SEGV $$",
    "kill -TERM $$",
    "kill -9 $$",
    "sh -c 'kill -INT $$'; echo child $?; sh -c 'exit 300'; echo $?",
    "/usr/local/bin/rootprobe.static nosuchcall",
    "/no/such/program; echo $?",
    "/etc; echo $?",
], ids=["exit7", "segv", "term", "kill", "child", "usage", "notfound", "notexec"])
def test_exit_and_signals(pair, script, platform):
    pair.compare(sh(script), platform)
