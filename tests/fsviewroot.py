"""Trees for the `zvisor run --root` tests: a tiny root of busybox-static
applets and static programs (made in a second, no download), the host's libc
for a dynamic program, and the leak probe's host-only and root-only trees.
Importable: the Debian rootfs tests build on these helpers.

    root = tiny_root(tmp_path / "root")        # busybox, goguest, hello.static
    dynamic_root(root)                          # + ld.so, libc, the dynamic hello
    root, hostdir = leak_trees(tmp_path)        # leakprobe's trees
    res = run_chroot(root, ["/bin/sh", "-c", "..."])  # the oracle, as root only
"""
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

from zvtest import Result, guest

BUSYBOX = shutil.which("busybox") or "/bin/busybox"
APPLETS = ("sh", "ls", "cat", "echo", "readlink", "ln", "mkdir", "rm", "rmdir", "test", "stat",
           "pwd", "head", "env", "true", "false", "sleep", "kill", "touch", "chmod", "id", "wc",
           "find", "tar", "cp", "mv", "realpath", "printf", "sed", "grep", "sort", "basename")


def busybox_is_static():
    try:
        with open(BUSYBOX, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b"/lib64/ld-linux" not in head and b"ld-linux-x86-64" not in head


def tiny_root(root):
    """A merged-/usr root (bin, sbin, lib, lib64 are symlinks into /usr) with
    busybox's applets, /proc, /dev, /sys and /tmp to bind over, a user and
    group file, and the static guests goguest and hello.static in /usr/bin."""
    root = Path(root)
    for d in ("usr/bin", "usr/lib", "usr/lib64", "etc", "proc", "dev", "sys", "tmp", "root",
              "home", "var"):
        (root / d).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "tmp", 0o1777)
    for link, to in (("bin", "usr/bin"), ("sbin", "usr/bin"), ("lib", "usr/lib"),
                     ("lib64", "usr/lib64"), ("var/run", "/run")):
        if not os.path.lexists(root / link):
            os.symlink(to, root / link)
    (root / "run").mkdir(exist_ok=True)
    shutil.copy(BUSYBOX, root / "usr/bin/busybox")
    for a in APPLETS:
        if not os.path.lexists(root / "usr/bin" / a):
            os.symlink("busybox", root / "usr/bin" / a)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n")
    (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    (root / "etc/os-release").write_text('PRETTY_NAME="zvisor tiny root"\nID=tiny\n')
    for g in ("goguest", "hello.static", "fsloop.static"):
        if os.path.exists(guest(g)):
            shutil.copy(guest(g), root / "usr/bin" / g)
    return root


def dynamic_root(root):
    """The host's dynamic loader and the libraries of the dynamic hello guest
    in root's /usr/lib/x86_64-linux-gnu, /lib64/ld-linux-x86-64.so.2 an
    absolute symlink to it (as Debian has it), and hello in /usr/bin."""
    root = Path(root)
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True, exist_ok=True)
    hello = guest("hello")
    out = subprocess.run(["ldd", hello], capture_output=True, text=True).stdout
    for word in out.split():
        if word.startswith("/") and os.path.exists(word):
            shutil.copy(os.path.realpath(word), libdir / os.path.basename(word))
    ld = libdir / "ld-linux-x86-64.so.2"
    if not os.path.lexists(root / "usr/lib64/ld-linux-x86-64.so.2"):
        os.symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root / "usr/lib64/ld-linux-x86-64.so.2")
    shutil.copy(hello, root / "usr/bin/hello")
    return ld


def leak_trees(base, probe=None):
    """tests/guests/leakprobe.c's trees under base: (root, hostdir). hostdir
    exists only on the host; root has /r with the probe as /r/prog and the
    symlinks that lead out of it."""
    base = Path(base)
    probe = probe or guest("leakprobe.static")
    host, root = base / "host", base / "root"
    (host / "dir").mkdir(parents=True)
    (host / "file").write_text("HOST\n")
    os.symlink("hosttarget", host / "link")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(host / "sock"))  # a socket file nobody listens on
    s.close()
    shutil.copy(probe, host / "prog")
    r = root / "r"
    for d in ("proc", "dev", "sys", "tmp"):
        (root / d).mkdir(parents=True)
    (r / "dir").mkdir(parents=True)
    (r / "file").write_text("ROOT\n")
    os.symlink("roottarget", r / "link")
    shutil.copy(probe, r / "prog")
    os.symlink(str(host / "file"), r / "abs")
    os.symlink(str(host), r / "absdir")
    up = "../" * 12 + str(host).lstrip("/")
    os.symlink(up + "/file", r / "esc")
    os.symlink(up, r / "escdir")
    return root, host


def snapshot(tree):
    """What a leak could change under tree: every entry's type, mode, size,
    times, content and user xattrs."""
    out = {}
    for top, dirs, files in os.walk(tree):
        for n in dirs + files + [""]:
            p = os.path.join(top, n)
            st = os.lstat(p)
            info = [stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns,
                    st.st_uid, st.st_gid]
            if stat.S_ISREG(st.st_mode):
                info.append(Path(p).read_bytes())
            elif stat.S_ISLNK(st.st_mode):
                info.append(os.readlink(p))
            try:
                info.append(sorted(os.listxattr(p, follow_symlinks=False)))
            except OSError:
                pass
            out[p] = info
    return out


def run_chroot(root, argv, timeout=60):
    """argv in a chroot of root with the host's /proc, /dev and /sys mounted
    over its own (a private mount namespace): the oracle for --root. Root
    only (None otherwise)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    script = ('for d in proc dev sys; do mount --rbind /$d "$0/$d" || exit 99; done; '
              'exec chroot "$0" "$@"')
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(root)]
                       + list(argv), capture_output=True, timeout=timeout)
    return Result(p.stdout.decode("utf-8", "surrogateescape"), p.stderr.decode("utf-8", "surrogateescape"),
                  p.returncode)
