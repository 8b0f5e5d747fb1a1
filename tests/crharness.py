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

    def wait_for(self, pred, timeout=30):
        """Wait until pred(stdout so far) holds; False when the program
        ended or the time ran out first."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred("".join(self.out)):
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


def _ask(family, address, text, deadline, server):
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
    return (_ask(socket.AF_INET, ("127.0.0.1", port), "hello tcp", deadline, server)
            + _ask(socket.AF_UNIX, str(path), "hello unix", deadline, server))


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
