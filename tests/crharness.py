"""What tests/test_checkpoint.py runs: the checkpoint guests (cases), a
program running in the background whose output is read as it comes, and
the zvisor checkpoint/restore commands (docs/CHECKPOINT.md).

A case is cut at a random point: after its first line of output plus a
random share of the time the native run took from its first line to its
end. The random source is seeded from ZV_CR_SEED (printed with every
failure), so a failing cut can be taken again."""
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import guestdesc
import zvtest
from zvtest import Result, Timeout

CR_DIR = Path(__file__).resolve().parent / "cr"
SEED = int(os.environ.get("ZV_CR_SEED") or random.randrange(1 << 32))
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
SQLITE = shutil.which("sqlite3")


def user():
    """Who runs the guests: ZV_TEST_USER (make check-rootless) or this process."""
    return zvtest.TEST_USER


# --- is the core there? ---------------------------------------------------------

_core = None


def core_missing():
    """Why `zvisor checkpoint` cannot be tested yet (None when it can):
    `zvisor --help` does not list the checkpoint and restore commands."""
    global _core
    if _core is None:
        try:
            out = subprocess.run([str(zvtest.ZVISOR), "--help"], capture_output=True, text=True,
                                 timeout=30).stdout
        except OSError as e:
            out = str(e)
        has = all(" %s " % c in out for c in ("checkpoint", "restore"))
        _core = "" if has else ("zvisor checkpoint/restore are not commands of %s"
                                % zvtest.ZVISOR)
    return _core or None


def need_core():
    """Skips the test when `zvisor checkpoint` is not there yet."""
    why = core_missing()
    if why:
        pytest.skip(why)


def workdir(tmp_path):
    """Where the guests run: a directory the test user can write."""
    return str(zvtest.user_tmp(user())) if user() else str(tmp_path)


# --- a program in the background -----------------------------------------------

class Running:
    """argv started in a session of its own (as `user`), its stdout and
    stderr read by two threads as they come."""

    def __init__(self, argv, cwd=None, as_user=None, env=None, pass_fds=()):
        argv, env, cwd = zvtest.user_command(argv, env, cwd, as_user)
        self.argv = argv
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env,
                                     start_new_session=True, pass_fds=pass_fds)
        self.pid = self.proc.pid  # setpriv execs: the same process
        self.out, self.err = [], []
        self.first_line_at = None
        self.cond = threading.Condition()
        self.readers = [threading.Thread(target=self._read, args=(f, lst), daemon=True)
                        for f, lst in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self.readers:
            t.start()

    def _read(self, f, lst):
        for line in iter(f.readline, b""):
            with self.cond:
                if lst is self.out and self.first_line_at is None:
                    self.first_line_at = time.monotonic()
                lst.append(line.decode("utf-8", "surrogateescape"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def stdout(self):
        with self.cond:
            return "".join(self.out)

    def wait_for(self, pred, timeout=30, stderr=False):
        """Wait until pred(stdout so far, or stderr) holds; False when the
        program ended or the time ran out first."""
        deadline = time.monotonic() + timeout
        lst = self.err if stderr else self.out
        with self.cond:
            while not pred("".join(lst)):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not any(
                        t.is_alive() for t in self.readers)):
                    return False
                self.cond.wait(min(left, 0.05))
            return True

    def wait_first_line(self, timeout=30):
        if not self.wait_for(bool, timeout):
            raise AssertionError("no first line from %s within %ss\n%s" % (
                " ".join(self.argv), timeout, self.result_text()))

    def finish(self, timeout=zvtest.DEFAULT_TIMEOUT):
        """Wait for the end; the Result (raises Timeout, killing it, when it
        does not end in time)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Timeout("timed out after %ss: %s\n%s" % (timeout, " ".join(self.argv),
                                                          self.result_text()))
        for t in self.readers:
            t.join(10)
        return Result("".join(self.out), "".join(self.err), self.proc.returncode)

    def result_text(self):
        return "--- stdout (tail):\n%s\n--- stderr (tail):\n%s" % (
            "".join(self.out)[-2000:], "".join(self.err)[-2000:])

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def fd_count(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def rss_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS in /proc/%d/status" % self.pid)


# --- the listening guest's client ----------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(family, address, text, deadline, server):
    """Connect (retrying while nothing listens yet and the server, a
    Running, runs), say text, return the answer."""
    while True:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(max(1.0, deadline - time.monotonic()))
        try:
            s.connect(address)
            break
        except (ConnectionRefusedError, FileNotFoundError):
            s.close()
            if time.monotonic() > deadline or server.proc.poll() is not None:
                raise AssertionError("%s: nothing listens at %s (%s)\n%s" % (
                    " ".join(server.argv), address, "the program ended" if
                    server.proc.poll() is not None else "time out", server.result_text())) from None
            time.sleep(0.05)
    with s:
        s.sendall(text.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(256)
            if not chunk:
                break
            data += chunk
    return data.decode()


def listen_client(server, port, path, timeout=30):
    """What cr_listen (server, a Running: the guest or its restore) answers
    a client on each socket."""
    deadline = time.monotonic() + timeout
    return (ask(socket.AF_INET, ("127.0.0.1", port), "hello tcp", deadline, server)
            + ask(socket.AF_UNIX, str(path), "hello unix", deadline, server))


# --- the cases --------------------------------------------------------------------

class Case:
    """A guest of the checkpoint tests. argv(tmp) gives its command line
    in the scratch directory tmp (which it may use), check(result) what its
    native run must do, client: whether cr_listen's client talks to it."""

    def __init__(self, name, argv, check, client=False, needs=None):
        self.name, self.argv, self.check = name, argv, check
        self.client, self.needs = client, needs

    def missing(self):
        """Why this case cannot run here (a tool is missing), or None."""
        return self.needs and self.needs() or None


def _desc_check(name, mode=""):
    return lambda res: guestdesc.get(name).run(mode).check(res)


def _check_status_and(status, *lines):
    def check(res):
        assert res.returncode == status and "FAIL" not in res.stdout, (
            "native run itself failed: %s (expected %s)\n%s%s" % (
                zvtest.status_text(res.returncode), zvtest.status_text(status),
                res.stdout[-3000:], res.stderr[-2000:]))
        for line in lines:
            assert line in res.stdout.splitlines(), "native run does not print %r:\n%s" % (
                line, res.stdout[-3000:])
    return check


def _listen_argv(tmp):
    return [zvtest.guest("cr_listen"), str(free_port()), str(Path(tmp) / "cr_listen.sock")]


CASES = [
    Case("counter", lambda tmp: [zvtest.guest("cr_counter")], _desc_check("cr_counter")),
    Case("threads", lambda tmp: [zvtest.guest("cr_threads")], _desc_check("cr_threads")),
    Case("python", lambda tmp: [PYTHON, str(CR_DIR / "cr_python.py")],
         _check_status_and(6, "file at offset 1000, next line '052 a9334987ece7'"),
         needs=lambda: not PYTHON and "no python3"),
    Case("go", lambda tmp: [zvtest.guest("crgoguest")], _desc_check("crgo")),
    Case("sqlite", lambda tmp: [SQLITE or "sqlite3", "-batch", str(Path(tmp) / "cr.db"),
                                ".read " + str(CR_DIR / "cr_sqlite.sql")],
         _check_status_and(0, "committed|1210|732655|20", "ok"),
         needs=lambda: not SQLITE and "no sqlite3 (scripts/install-deps.sh installs it)"),
    Case("sleepers", lambda tmp: [zvtest.guest("cr_sleepers")], _desc_check("cr_sleepers")),
    Case("listen", _listen_argv,
         _check_status_and(0, "tcp client said 'hello tcp'", "unix client said 'hello unix'",
                           "served both"), client=True),
]
CASE = {c.name: c for c in CASES}


def client_of(argv):
    """cr_listen's port and socket path, from its command line."""
    return int(argv[-2]), argv[-1]


def run_native(case, tmp):
    """The case run natively and uncut: (Result, client transcript, seconds
    from its first line to its end)."""
    argv = case.argv(tmp)
    g = Running(argv, cwd=tmp, as_user=user())
    try:
        g.wait_first_line()
        said = listen_client(g, *client_of(argv)) if case.client else ""
        res = g.finish()
    finally:
        g.kill()
    span = time.monotonic() - (g.first_line_at or g.started)
    return res, said, span


# --- checkpoint and restore --------------------------------------------------------

def zv(*args, as_user=None, timeout=zvtest.DEFAULT_TIMEOUT, cwd=None):
    """zvisor with these arguments, as as_user; its Result."""
    return zvtest.run([zvtest.ZVISOR] + [str(a) for a in args], user=as_user, timeout=timeout,
                      cwd=cwd)


def checkpoint(pid, dirpath, leave_running=False, as_user=None, what=""):
    """`zvisor checkpoint [--leave-running] PID DIR`, which must succeed
    (what: the circumstances, for the message)."""
    opts = ["--leave-running"] if leave_running else []
    res = zv("checkpoint", *opts, pid, dirpath, as_user=as_user)
    assert res.returncode == 0 and (Path(dirpath) / "index.json").is_file(), (
        "%szvisor checkpoint %s%s %s: %s, no image\n%s%s" % (
            what and what + ": ", "--leave-running " if leave_running else "", pid, dirpath,
            zvtest.status_text(res.returncode), res.stdout, res.stderr))
    return res


def random_delay(rng, span, share=0.6):
    """A random point within the first `share` of a run's span."""
    return rng.uniform(0, share * span)


def rng_for(nodeid):
    return random.Random("%d:%s" % (SEED, nodeid))


# --- guests cut where they say they are ready ------------------------------------

def said_line(line):
    """A predicate: the output so far has `line` as a whole line."""
    return lambda out: ("\n" + out).find("\n" + line + "\n") >= 0


def signals_held(pid, timeout=30):
    """Wait until process pid (a `zvisor restore` just started) can take a
    signal: from zvisor's first instruction on it blocks every signal until
    the restored program's threads resume with their own masks (and its
    name), but a signal sent before that instruction gets the default
    action."""
    deadline = time.monotonic() + timeout
    zvisor = os.path.realpath(zvtest.ZVISOR)
    while time.monotonic() < deadline:
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
            with open("/proc/%d/status" % pid) as f:
                st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except FileNotFoundError:
            return  # it ended
        except OSError:
            exe, st = "", {}
        if exe == zvisor and (int(st.get("SigBlk", "0").strip(), 16) or
                              st.get("Name", "").strip() != "zvisor"):
            return
        time.sleep(0.002)


_native_once = {}


def staged_native_once(guest, markers, cwd):
    """The guest's staged native run as the test user, made once per test
    process (its output does not depend on the directory), checked to end
    well."""
    if guest not in _native_once:
        res = staged_native([zvtest.guest(guest)], markers, cwd, as_user=user())
        assert res.returncode == 0 and "FAIL" not in res.stdout, zvtest.explain(res, res)
        _native_once[guest] = res
    return _native_once[guest]


def staged_native(argv, markers, cwd, as_user=None, sig=signal.SIGUSR1, timeout=60):
    """argv run natively: each time it says the next of markers (a whole
    line), it is sent sig. Its Result."""
    g = Running(argv, cwd=cwd, as_user=as_user)
    try:
        for m in markers:
            if not g.wait_for(said_line(m), timeout):
                raise AssertionError("native %s never said %r\n%s" % (argv, m, g.result_text()))
            os.kill(g.pid, sig)
        return g.finish()
    finally:
        g.kill()


def staged_cuts(argv, markers, tmp, as_user=None, sig=signal.SIGUSR1, checkpoint_opts=(),
                restore_opts=(), before_cut=None, timeout=60):
    """argv (a zvisor command line) cut at each of markers (a whole line of
    its output, said before it waits for sig): checkpointed into
    tmp/imageN, restored from it (`zvisor restore RESTORE_OPTS`), sent sig,
    and so on; before_cut(n, running) runs once the nth marker is said,
    before its checkpoint. Returns (Results joined, [Results])."""
    results = []
    g = Running(argv, cwd=tmp, as_user=as_user)
    try:
        for n, m in enumerate(markers, 1):
            if not g.wait_for(said_line(m), timeout):
                raise AssertionError("%s never said %r\n%s" % (g.argv, m, g.result_text()))
            if before_cut:
                before_cut(n, g)
            image = Path(tmp) / ("image%d" % n)
            res = zv("checkpoint", *checkpoint_opts, g.pid, image, as_user=as_user)
            assert res.returncode == 0, "checkpoint %d (after %r): %s\n%s%s" % (
                n, m, zvtest.status_text(res.returncode), res.stderr, g.result_text())
            results.append(g.finish(timeout=30))
            g = Running([zvtest.ZVISOR, "restore"] + list(restore_opts) + [str(image)], cwd=tmp,
                        as_user=as_user)
            signals_held(g.pid)
            os.kill(g.pid, sig)
        results.append(g.finish(timeout=timeout))
    finally:
        g.kill()
    joined = Result("".join(r.stdout for r in results), "".join(r.stderr for r in results),
                    results[-1].returncode)
    return joined, results


# --- trees cut where every process said it is ready -----------------------------

def readies(n):
    """A predicate: stderr holds n lines starting "ready"."""
    return lambda err: sum(1 for l in err.splitlines() if l.startswith("ready")) >= n


def make_go(tmp):
    path = Path(tmp) / "go"
    path.write_text("")
    if user():
        zvtest.chown_tree(str(path), user())


def tree_native(argv, nready, tmp, during=None, timeout=120):
    """argv run natively in tmp: once its processes said ready (n lines on
    stderr), during(running) runs and the file go is made. Its Result."""
    go = Path(tmp) / "go"
    if go.exists():
        go.unlink()
    g = Running(argv, cwd=tmp, as_user=user())
    try:
        if not g.wait_for(readies(nready), timeout, stderr=True):
            raise AssertionError("native %s never said ready %d times\n%s" % (argv, nready, g.result_text()))
        make_go(tmp)
        if during:
            during(g)
        return g.finish(timeout=timeout)
    finally:
        g.kill()
        if go.exists():
            go.unlink()


def tree_cut(argv, nready, tmp, checkpoint_opts=(), restore_opts=(), during=None, leave_running=False,
             timeout=120):
    """argv (a zvisor command line) cut once its processes said ready:
    checkpointed into tmp/image (--leave-running: the original then made
    to go on by the file go, and its Result returned too), restored, the
    file go made, during(running) run. Returns (the original's and the
    restore's Results joined, the original's Result)."""
    go = Path(tmp) / "go"
    if go.exists():
        go.unlink()
    image = Path(tmp) / "image"
    g = Running(argv, cwd=tmp, as_user=user())
    try:
        if not g.wait_for(readies(nready), timeout, stderr=True):
            raise AssertionError("%s never said ready %d times\n%s" % (argv, nready, g.result_text()))
        opts = list(checkpoint_opts) + (["--leave-running"] if leave_running else [])
        res = zv("checkpoint", *opts, g.pid, image, as_user=user(), timeout=timeout)
        assert res.returncode == 0, "zvisor checkpoint of the tree: %s\n%s%s" % (
            zvtest.status_text(res.returncode), res.stderr, g.result_text())
        if leave_running:
            make_go(tmp)
            if during:
                during(g)
        orig = g.finish(timeout=timeout)
    finally:
        g.kill()
    if go.exists():
        go.unlink()
    r = Running([zvtest.ZVISOR, "restore"] + list(restore_opts) + [str(image)], cwd=tmp, as_user=user())
    try:
        signals_held(r.pid)
        make_go(tmp)
        if during:
            during(r)
        rest = r.finish(timeout=timeout)
    finally:
        r.kill()
        if go.exists():
            go.unlink()
    if leave_running:
        return rest, orig
    return Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode), orig
