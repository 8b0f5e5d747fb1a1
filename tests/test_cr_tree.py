"""Process trees across a checkpoint (kernel/cr/coord.c, serve.c,
treerestore.c, pids.c; docs/CHECKPOINT.md "Process trees"). Each case
starts a tree whose processes say "ready" on stderr once set up and then
wait for a file named go (tests/guests/cr_tree.c, tests/cr/cr_pool.py):
natively the test makes go at once; under zvisor it first checkpoints the
tree (`zvisor checkpoint ROOT DIR`, which saves the root and all its
descendants), restores it (`zvisor restore DIR`) and then makes go. The
original's output and the restore's together must be the native output,
with its status: a shell pipeline of three processes, fork and a pipe, a
socketpair with queued bytes and a pipe's end in flight, a TCP client and
server mid-conversation, a server with a listening socket and two worker
processes, zombies waited for after the restore, a process group signalled
after it, MAP_SHARED anonymous memory between parent and child, a SysV shared
memory segment between them (its id kept), a named FIFO
with unread lines in it, a datagram socketpair with messages queued both
ways (each must come out whole), a Python
multiprocessing pool, a session whose controlling terminal is a pty the
tree holds the master of (tests/guests/cr_pty.c); --leave-running on a
tree; what still refuses a session's terminal; a shell's job keeping the
restorer's terminal; a freeze whose SIGSYSes lose their siginfo
(RLIMIT_SIGPENDING 0); a checkpoint whose knocks lose theirs (the user's
queue of signals full)."""
import fcntl
import os
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import termios
import time
from pathlib import Path

import pytest

import crharness as cr
import zvtest

G = "cr_tree"
CR_DIR = Path(__file__).resolve().parent / "cr"
PLATFORMS = ["stubs", "sud", "seccomp"]


def guest(*args):
    return [zvtest.guest(G)] + [str(a) for a in args]


def pipeline():
    g = zvtest.guest(G)
    return ["/bin/sh", "-c", "%s gen 3000 | tr a-z A-Z | %s sum" % (g, g)]


def pool():
    return [cr.PYTHON, str(CR_DIR / "cr_pool.py")]


# name: (argv, how many say ready, platforms)
CASES = {
    "pipeline": (pipeline, 1),
    "forkpipe": (lambda: guest("forkpipe"), 2),
    "socketpair": (lambda: guest("socketpair"), 2),
    "tcp": (lambda: guest("tcp"), 2),
    "zombies": (lambda: guest("zombies"), 1),
    "pgrp": (lambda: guest("pgrp"), 1),
    "pidfd": (lambda: guest("pidfd"), 2),
    "threadexit": (lambda: guest("threadexit"), 1),
    "shmem": (lambda: guest("shmem"), 2),
    "sysv": (lambda: guest("sysv"), 2),
    "fifo": (lambda: guest("fifo"), 2),
    "dgram": (lambda: guest("dgram"), 2),
    "pool": (pool, 1),
    "pty": (lambda: [zvtest.guest("cr_pty"), "session"], 3),
}


def same(nat, joined, what):
    """Same stdout and status; stderr the same lines (processes say ready
    in any order)."""
    assert (joined.stdout, joined.returncode) == (nat.stdout, nat.returncode), zvtest.explain(nat, joined, what)
    assert sorted(joined.stderr.splitlines()) == sorted(nat.stderr.splitlines()), zvtest.explain(nat, joined, what)


_native = {}


def native(name, tmp, during=None):
    if name not in _native:
        argv, n = CASES[name]
        nat = cr.tree_native(argv(), n, tmp, during)
        assert "FAIL" not in nat.stdout and nat.returncode == 0, zvtest.explain(nat, nat, "native " + name)
        _native[name] = nat
    return _native[name]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_tree(name, platform, tmp_path):
    cr.need_core()
    if name == "pool" and not cr.PYTHON:
        pytest.skip("no python3")
    tmp = cr.workdir(tmp_path)
    nat = native(name, tmp)
    argv, n = CASES[name]
    joined, _ = cr.tree_cut(zvtest.zv_argv(argv(), platform), n, tmp)
    same(nat, joined, "the tree %s cut once ready, platform %s" % (name, platform))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_freeze_info_lost(platform, tmp_path):
    """A process whose queued signals lose their siginfo (RLIMIT_SIGPENDING
    0, as when its user's queue of pending signals is full) is frozen by
    --checkpoint-on's signal: the freeze's SIGSYS to each thread comes as
    SI_USER from pid 0 and must not kill it as the guest's (cr/freeze.c).
    The threadexit tree's three threads are each asked."""
    cr.need_core()
    if not shutil.which("prlimit"):
        pytest.skip("no prlimit")
    tmp = cr.workdir(tmp_path)
    nat = native("threadexit", tmp)
    image = Path(tmp) / "image"
    argv = ["prlimit", "--sigpending=0"] + zvtest.zv_argv(
        guest("threadexit"), platform, ["--checkpoint-on=USR2", "--checkpoint-dir=%s" % image])
    g = cr.Running(argv, cwd=tmp, as_user=cr.user())
    try:
        assert g.wait_for(cr.readies(1), 120, stderr=True), g.result_text()
        os.kill(g.pid, signal.SIGUSR2)
        orig = g.finish(timeout=60)
    finally:
        g.kill()
    assert orig.returncode == -signal.SIGKILL, "after SIGUSR2: %s\n%s" % (
        zvtest.status_text(orig.returncode), g.result_text())
    r = cr.Running([zvtest.ZVISOR, "restore", str(image)], cwd=tmp, as_user=cr.user())
    try:
        cr.signals_held(r.pid)
        cr.make_go(tmp)
        rest = r.finish(timeout=60)
    finally:
        r.kill()
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    same(nat, joined, "threadexit frozen with RLIMIT_SIGPENDING 0, platform %s" % platform)


# Another process of the user with many signals queued: a blocked real-time
# signal sent to itself N times (kill queues past RLIMIT_SIGPENDING), freed
# when it is killed; it lives two minutes at most.
FLOOD = """import os, signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})
for _ in range(%d):
    os.kill(os.getpid(), signal.SIGRTMIN)
print("queued", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("platform", PLATFORMS)
def test_knock_with_full_signal_queue(platform, tmp_path):
    """The user's queue of pending signals is past the tree's
    RLIMIT_SIGPENDING (64) because another process of the user holds 256:
    every SIGSYS sent to the tree comes without its siginfo, the knocks of
    `zvisor checkpoint` too (sent again, they would be again). Each process
    must still be reached (peer/peer.c finds the knock where its asker
    listens, in /proc/net/unix), frozen and saved, not time out. The
    flooder is killed at the end, which frees its signals."""
    cr.need_core()
    if not shutil.which("prlimit") or not cr.PYTHON:
        pytest.skip("no prlimit or python3")
    tmp = cr.workdir(tmp_path)
    nat = native("forkpipe", tmp)
    flood = cr.Running([cr.PYTHON, "-c", FLOOD % 256], cwd=tmp, as_user=cr.user())
    try:
        assert flood.wait_for(lambda out: "queued" in out, 60), flood.result_text()
        argv, n = CASES["forkpipe"]
        joined, _ = cr.tree_cut(["prlimit", "--sigpending=64"] + zvtest.zv_argv(argv(), platform), n, tmp,
                                timeout=60)
    finally:
        flood.kill()
    same(nat, joined, "forkpipe with the user's signal queue full, platform %s" % platform)


def clients(port_of):
    """During the run: two clients of the workers' port, each served. A
    restore listens again only once it has made its sockets, so a refused
    connection is tried again while the tree runs."""
    def during(g):
        port = port_of(g)
        deadline = time.monotonic() + 60
        for _ in range(2):
            assert cr.ask(socket.AF_INET, ("127.0.0.1", port), "hello", deadline, g) == "served\n"
    return during


def port_from(g):
    m = re.search(r"^port (\d+)$", "".join(g.err), re.M)
    assert m, g.result_text()
    return int(m.group(1))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_workers(platform, tmp_path):
    """A listening socket shared by two worker processes: after the
    restore each takes a client of the test's."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = cr.tree_native(guest("workers"), 3, tmp, clients(port_from))
    assert "both workers served a client: ok" in nat.stdout, nat.stdout
    seen = {}

    def port_of(g):
        if "port" not in seen:
            seen["port"] = port_from(g)
        return seen["port"]

    # the original says the port; the restored tree listens there again
    argv = zvtest.zv_argv(guest("workers"), platform)
    go = Path(tmp) / "go"
    g = cr.Running(argv, cwd=tmp, as_user=cr.user())
    try:
        assert g.wait_for(cr.readies(3), 120, stderr=True), g.result_text()
        port_of(g)
        res = cr.zv("checkpoint", g.pid, Path(tmp) / "image", as_user=cr.user(), timeout=120)
        assert res.returncode == 0, res.stderr
        orig = g.finish(timeout=60)
    finally:
        g.kill()
    r = cr.Running([zvtest.ZVISOR, "restore", str(Path(tmp) / "image")], cwd=tmp, as_user=cr.user())
    try:
        cr.signals_held(r.pid)
        cr.make_go(tmp)
        clients(port_of)(r)
        rest = r.finish(timeout=60)
    finally:
        r.kill()
        if go.exists():
            go.unlink()
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    assert (joined.stdout, joined.returncode) == (nat.stdout, nat.returncode), zvtest.explain(nat, joined, "workers")


@pytest.mark.parametrize("name", ["pipeline", "pty"])
def test_leave_running_tree(name, tmp_path):
    """--leave-running: the pipeline (or the session on a pty of the tree's)
    goes on as a whole to its native end; its image, restored after, ends
    as natively again (on a pty of its own)."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native(name, tmp)
    argv, n = CASES[name]
    rest, orig = cr.tree_cut(zvtest.zv_argv(argv()), n, tmp, leave_running=True)
    same(nat, orig, "the %s after a --leave-running checkpoint" % name)
    assert (rest.stdout, rest.returncode) == (nat.stdout, nat.returncode), zvtest.explain(nat, rest, "its restore")


@pytest.mark.parametrize("name,reads", [("forkpipe", False), ("tcp", True)])
def test_census_tcp_tables(name, reads, tmp_path):
    """The census reads /proc/PID/net/tcp and tcp6 (each read walks the
    host's whole connection table) only when a saved process holds a
    socket: not for a pipe between parent and child, and for the TCP pair,
    whose restore (test_tree) needs them."""
    cr.need_core()
    if not shutil.which("strace"):
        pytest.skip("no strace")
    tmp = cr.workdir(tmp_path)
    argv, n = CASES[name]
    g = cr.Running(zvtest.zv_argv(argv()), cwd=tmp)
    log = Path(tmp) / "strace.log"
    try:
        assert g.wait_for(cr.readies(n), 120, stderr=True), g.result_text()
        res = zvtest.run(["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(log), zvtest.ZVISOR,
                          "checkpoint", str(g.pid), str(Path(tmp) / "image")], timeout=120)
    finally:
        g.kill()
    assert res.returncode == 0 and (Path(tmp) / "image" / "index.json").is_file(), res.stderr
    opened = re.findall(r'openat\(AT_FDCWD, "/proc/\d+/net/tcp6?"', log.read_text())
    assert len(opened) == (2 if reads else 0), opened


def test_sysv_shared_outside(tmp_path):
    """A SysV segment also attached by a process outside the saved ones
    (the child of sysv saved without its parent) cannot be made again as
    the restore's own: the checkpoint refuses it at once, with one line
    naming the segment, and the saved tree goes on."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    g = cr.Running(zvtest.zv_argv(guest("sysv")), cwd=tmp, as_user=cr.user())
    try:
        assert g.wait_for(cr.readies(2), 120, stderr=True), g.result_text()
        child = Path("/proc/%d/task/%d/children" % (g.pid, g.pid)).read_text().split()[0]
        res = cr.zv("checkpoint", child, Path(tmp) / "image", as_user=cr.user(), timeout=120)
        alive = Path("/proc/%s" % child).exists()
    finally:
        g.kill()
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert re.match(r"zvisor: checkpoint: SysV shared memory \d+ \(key 0x0\) has 2 attachments, 1 of them in "
                    r"the saved processes: it is shared with others\n$", res.stderr), res.stderr
    assert not (Path(tmp) / "image").exists() and alive


# A session leader whose terminal is a pty: alone, the process holds its
# master; outside, its parent (not saved) does.
SESSION_WITH_PTY = """
import fcntl, os, sys, termios, time
m, s = os.openpty()
if sys.argv[1] == "alone" or os.fork() == 0:
    if os.getsid(0) != os.getpid():
        os.setsid()
    fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    print("ready", file=sys.stderr, flush=True)
while not os.path.exists("go"):
    time.sleep(0.01)
"""


@pytest.mark.parametrize("where", ["alone", "outside"])
def test_own_terminal_refused(where, tmp_path):
    """A process that leads its own session with a controlling terminal
    the restore would not make again: a pty whose master is outside the
    saved processes, or a process alone (the terminal is made again for a
    tree). The checkpoint refuses it with one line that says so."""
    cr.need_core()
    if not cr.PYTHON:
        pytest.skip("no python3")
    tmp = cr.workdir(tmp_path)
    g = cr.Running(zvtest.zv_argv([cr.PYTHON, "-c", SESSION_WITH_PTY, where]), cwd=tmp, as_user=cr.user())
    pid = g.pid
    try:
        assert g.wait_for(cr.readies(1), 120, stderr=True), g.result_text()
        if where == "outside":
            pid = int(Path("/proc/%d/task/%d/children" % (g.pid, g.pid)).read_text().split()[0])
        res = cr.zv("checkpoint", pid, Path(tmp) / "image", as_user=cr.user(), timeout=120)
    finally:
        if pid != g.pid:  # in a session of its own: not in the group g.kill ends
            os.kill(pid, signal.SIGKILL)
        g.kill()
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "controlling terminal" in res.stderr, res.stderr
    assert not (Path(tmp) / "image").exists()


def test_pty_queue_refused(tmp_path):
    """A pty of the tree with bytes not yet read (a line typed ahead): they
    cannot be read without taking them, so the checkpoint refuses it with
    one line."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    g = cr.Running(zvtest.zv_argv([zvtest.guest("cr_pty"), "queued"]), cwd=tmp, as_user=cr.user())
    try:
        assert g.wait_for(cr.readies(3), 120, stderr=True), g.result_text()
        res = cr.zv("checkpoint", g.pid, Path(tmp) / "image", as_user=cr.user(), timeout=120)
    finally:
        g.kill()
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "pseudo-terminal's queue" in res.stderr, res.stderr
    assert not (Path(tmp) / "image").exists()


def test_inotify_queue_refused(tmp_path):
    """An inotify instance with an event not yet read: reading it would take
    it, so the checkpoint refuses with one line and the program goes on."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    g = cr.Running(zvtest.zv_argv([zvtest.guest(G), "inotify-queued"]), cwd=tmp, as_user=cr.user())
    try:
        assert g.wait_for(cr.readies(1), 120, stderr=True), g.result_text()
        res = cr.zv("checkpoint", g.pid, Path(tmp) / "image", as_user=cr.user(), timeout=120)
        cr.make_go(tmp)
        out = g.finish(timeout=120)
    finally:
        g.kill()
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "events not yet read" in res.stderr, res.stderr
    assert not (Path(tmp) / "image").exists()
    assert "the event waited: ok" in out.stdout, out.stdout


# A job of an interactive shell on a terminal: says its pid on stderr, waits
# for go, then checks it has the shell's terminal and reads a line from it.
SHELL_JOB = """
import os, sys, time
print("ready", os.getpid(), file=sys.stderr, flush=True)
while not os.path.exists("go"):
    time.sleep(0.01)
print("job: the terminal is its stdin:", "ok" if os.isatty(0) else "FAIL")
print("job: in the foreground:", "ok" if os.tcgetpgrp(0) == os.getpgrp() else "FAIL")
print("job: not its session's leader:", "ok" if os.getsid(0) != os.getpid() else "FAIL")
print("job: the shell's terminal:", "ok" if os.ttyname(0) == os.environ["JOB_TTY"] else "FAIL")
print("job: say something", flush=True)
print("job: read", sys.stdin.readline().strip())
"""


class Terminal:
    """A pty whose master the test holds, and an interactive bash (as the
    test user) leading a session on it; what it prints, collected."""

    def __init__(self, cwd):
        self.master, slave = os.openpty()
        self.name = os.ttyname(slave)
        if cr.user():
            uid, gid = zvtest.user_ids(cr.user())
            os.fchown(slave, uid, gid)
        argv, env, cwd = zvtest.user_command(["bash", "--norc", "--noprofile", "-i"], None, cwd, cr.user())
        env = dict(env or os.environ, JOB_TTY=self.name, PS1="", PS2="")
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.out = b""
        self.say("stty -echo")

    def say(self, line):
        os.write(self.master, line.encode() + b"\n")

    def wait_for(self, text, timeout=120):
        deadline = time.monotonic() + timeout
        while text.encode() not in self.out and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    break
        return text.encode() in self.out

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def test_shell_job(tmp_path):
    """A program run as a job of an interactive shell (not its session's
    leader) keeps the restorer's terminal, as CRIU's --shell-job: checkpointed
    while it waits, restored as the next job of the same shell, it has the
    shell's terminal, is in the foreground and reads what is typed."""
    cr.need_core()
    if not cr.PYTHON:
        pytest.skip("no python3")
    tmp = cr.workdir(tmp_path)
    image = Path(tmp) / "image"
    t = Terminal(tmp)
    try:
        job = zvtest.zv_argv([cr.PYTHON, "-c", SHELL_JOB])
        t.say(" ".join(shlex.quote(a) for a in job) + " 2>err1")
        err1 = Path(tmp) / "err1"
        deadline = time.monotonic() + 120
        while not (err1.exists() and "ready" in err1.read_text()) and time.monotonic() < deadline:
            time.sleep(0.01)
        pid = err1.read_text().split()[1]
        res = cr.zv("checkpoint", pid, image, as_user=cr.user(), timeout=120)
        assert res.returncode == 0, res.stderr
        t.say("%s restore %s 2>err2; echo restored $?" % (shlex.quote(str(zvtest.ZVISOR)), shlex.quote(str(image))))
        cr.make_go(tmp)
        assert t.wait_for("job: say something"), t.out
        t.say("hello from the keyboard")
        assert t.wait_for("restored "), t.out
        out = t.out.decode(errors="replace").replace("\r", "")
    finally:
        t.close()
    for check in ("the terminal is its stdin", "in the foreground", "not its session's leader", "the shell's terminal"):
        assert "job: %s: ok" % check in out, out
    assert "job: read hello from the keyboard" in out, out
    assert "restored 0" in out, out + (Path(tmp) / "err2").read_text()
