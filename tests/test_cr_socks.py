"""Pipes, FIFOs and sockets across a checkpoint, in one process
(kernel/cr/fdsock.c, objects.c, sockmake.c; docs/CHECKPOINT.md): the guest
cr_socks sets up its files, says "ready" and waits for SIGUSR1; it is cut
there, restored and sent SIGUSR1; what it then reads must be what it reads
natively: socketpairs with queued messages and a pipe's end in flight, a
Unix client and server with their names, a TCP connection with its
addresses, a FIFO, a socket whose peer closed. Then what leads outside: a
TCP connection to the test (refused with one line; with --tcp-close
restored closed) and an inherited pipe (refused; with --inherit-fd given
to both commands, the restorer's fd)."""
import os
import signal
import socket
import threading

import pytest

import crharness as cr
import zvtest

GUEST = "cr_socks"
PLATFORMS = ["stubs", "sud", "seccomp"]


def argv_of(mode, tmp):
    return [zvtest.guest(GUEST)] + mode.replace("DIR", tmp).split()


MODES = ["pair", "unix DIR", "tcp", "fifo DIR", "gone"]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", MODES)
def test_files_come_back(mode, platform, tmp_path):
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = argv_of(mode, tmp)
    nat = cr.staged_native(argv, ["ready"], tmp, as_user=cr.user())
    assert nat.returncode == 0 and "FAIL" not in nat.stdout, zvtest.explain(nat, nat, "native " + mode)
    joined, _ = cr.staged_cuts(zvtest.zv_argv(argv, platform), ["ready"], tmp, as_user=cr.user())
    zvtest.assert_same(nat, joined, "cr_socks %s cut at ready, platform %s" % (mode, platform))


class Server:
    """A TCP server outside the guest: greets each client, then closes its
    connection when told (close())."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.lock = threading.Lock()
        self.closed = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            # Kept before the greeting: once the client is greeted, close()
            # must find the connection.
            with self.lock:
                if self.closed:
                    c.close()
                    return
                self.conns.append(c)
            try:
                c.sendall(b"hello\n")
            except OSError:
                pass

    def close(self):
        with self.lock:
            self.closed = True
            for c in self.conns:
                c.close()
            self.conns = []
        self.sock.close()


def test_tcp_to_the_outside(tmp_path):
    """A connection to a server outside: refused with one line naming it;
    with --tcp-close it is saved closed, and the restored guest reads its
    end as it does natively when the server closes it."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    srv = Server()
    try:
        argv = argv_of("tcpclose %d" % srv.port, tmp)
        g = cr.Running(argv, cwd=tmp, as_user=cr.user())
        assert g.wait_for(cr.said_line("ready")), g.result_text()
        srv.close()
        os.kill(g.pid, signal.SIGUSR1)
        nat = g.finish()
    finally:
        srv.close()
    assert "the connection ends: ok" in nat.stdout, nat.stdout
    srv = Server()
    try:
        argv = argv_of("tcpclose %d" % srv.port, tmp)
        g = cr.Running(zvtest.zv_argv(argv), cwd=tmp, as_user=cr.user())
        try:
            assert g.wait_for(cr.said_line("ready")), g.result_text()
            res = cr.zv("checkpoint", g.pid, os.path.join(tmp, "refused"), as_user=cr.user())
            cr_assert_one_line(res, "a TCP connection to the outside")
            assert "TCP connection to the outside" in res.stderr and "--tcp-close" in res.stderr, res.stderr
        finally:
            g.kill()
        joined, _ = cr.staged_cuts(zvtest.zv_argv(argv), ["ready"], tmp, as_user=cr.user(),
                                   checkpoint_opts=["--tcp-close"])
    finally:
        srv.close()
    zvtest.assert_same(nat, joined, "a connection to the outside, --tcp-close")


def cr_assert_one_line(res, what):
    lines = res.stderr.splitlines()
    assert res.returncode == 1 and len(lines) == 1 and lines[0].startswith("zvisor: checkpoint: "), (
        "%s: want one line, status 1: %s\n%s" % (what, zvtest.status_text(res.returncode), res.stderr))


def as_fd5(fd, argv):
    """argv run with fd (of this process) as its fd 5 (this process's own
    fd 5 may be pytest's)."""
    code = "import os, sys; os.dup2(%d, 5); os.close(%d); os.execv(sys.argv[1], sys.argv[1:])" % (fd, fd)
    return [cr.PYTHON, "-c", code] + [str(a) for a in argv]


def test_inherit_fd(tmp_path):
    """A pipe the guest inherited as fd 5 leads outside: refused with one
    line; saved with `checkpoint --inherit-fd 5`, it is the restorer's fd 5
    given by `restore --inherit-fd 5` (refused with one line without it)."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = zvtest.zv_argv(argv_of("inherit", tmp))
    r1, w1 = os.pipe()
    try:
        g = cr.Running(as_fd5(w1, argv), cwd=tmp, as_user=cr.user(), pass_fds=(w1,))
    finally:
        os.close(w1)
    try:
        assert g.wait_for(cr.said_line("ready")), g.result_text()
        res = cr.zv("checkpoint", g.pid, os.path.join(tmp, "refused"), as_user=cr.user())
        cr_assert_one_line(res, "an inherited pipe")
        assert "fd 5 (pipe:" in res.stderr, res.stderr
        image = os.path.join(tmp, "image")
        res = cr.zv("checkpoint", "--inherit-fd", "5", g.pid, image, as_user=cr.user())
        assert res.returncode == 0, res.stderr
        g.finish(timeout=30)
    finally:
        g.kill()
        os.close(r1)
    res = cr.zv("restore", image, as_user=cr.user(), cwd=tmp)
    assert res.returncode == 1 and "--inherit-fd 5" in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
    r2, w2 = os.pipe()
    try:
        rest = cr.Running(as_fd5(w2, [zvtest.ZVISOR, "restore", "--inherit-fd", "5", image]), cwd=tmp,
                          as_user=cr.user(), pass_fds=(w2,))
    finally:
        os.close(w2)
    try:
        cr.signals_held(rest.pid)
        os.kill(rest.pid, signal.SIGUSR1)
        out = rest.finish()
        assert out.returncode == 0 and "fd 5 written: ok" in out.stdout, out
        assert os.read(r2, 100) == b"through the inherited fd\n"
    finally:
        rest.kill()
        os.close(r2)
