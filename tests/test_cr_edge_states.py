"""Checkpoints of process trees caught in the act (kernel/cr/coord.c,
fdsock.c, census.c, freeze.c, treerestore.c): a child ending while its
parent is frozen, a process stopped by SIGSTOP, a restore failing after
the program's fds are back, TCP connections whose original is killed,
closed on one side or still sending."""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import crharness as cr
import zvtest


def py(tmp, name, text):
    p = Path(tmp) / name
    p.write_text(text)
    return [cr.PYTHON, str(p)]


def start(argv, tmp):
    return cr.Running(zvtest.zv_argv(argv), cwd=tmp, as_user=cr.user())


def test_child_ending_while_frozen(tmp_path):
    """A shell forking short-lived children: a child listed by its frozen
    parent may be ending as it is asked. It is saved as the zombie it
    becomes: never 'does not run under zvisor', nor a wait of 20 s."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    g = start(["/bin/sh", "-c", "i=0; while [ $i -lt 100000 ]; do /bin/true; i=$((i+1)); done; echo $i"], tmp)
    try:
        time.sleep(0.5)
        for k in range(25):
            img = Path(tmp) / ("image%d" % k)
            t = time.monotonic()
            res = cr.zv("checkpoint", "--leave-running", g.pid, img, as_user=cr.user(), timeout=60)
            assert res.returncode == 0, res.stderr
            assert time.monotonic() - t < 10, "checkpoint %d took %.1fs" % (k, time.monotonic() - t)
    finally:
        g.kill()


def test_stopped_refused(tmp_path):
    """A process stopped by SIGSTOP runs no handler, so it cannot answer:
    one line that says so, at once (not 'did not answer' after 20 s); the
    tree goes on once continued."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = py(tmp, "stopped.py", """
import os, signal, sys, time
a = os.fork()
if a == 0:
    time.sleep(3); os._exit(7)
os.kill(a, signal.SIGSTOP)
os.waitpid(a, os.WUNTRACED)
print("stopped", flush=True)
time.sleep(3)
os.kill(a, signal.SIGCONT)
print("exit", os.waitpid(a, 0)[1] >> 8, flush=True)
""")
    g = start(argv, tmp)
    try:
        assert g.wait_for(lambda s: "stopped" in s, 60), g.result_text()
        t = time.monotonic()
        res = cr.zv("checkpoint", g.pid, Path(tmp) / "image", as_user=cr.user(), timeout=60)
        took = time.monotonic() - t
        out = g.finish(timeout=60)
    finally:
        g.kill()
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "is stopped" in res.stderr, res.stderr
    assert took < 5, took
    assert out.stdout == "stopped\nexit 7\n", out.stdout
    assert not (Path(tmp) / "image").exists()


def test_restore_failure_after_fds_said(tmp_path):
    """A restore that fails once the program's fds are back (its lock is
    held by the original, left running) says why on the restorer's stderr,
    though the program's fd 2 is /dev/null."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    lock = Path(tmp) / "lock"
    g = start(["/bin/sh", "-c", "exec 2>/dev/null; flock %s sleep 60" % lock], tmp)  # held for the whole test
    try:
        time.sleep(1)
        cr.checkpoint(g.pid, Path(tmp) / "image", leave_running=True, as_user=cr.user())
        res = cr.zv("restore", Path(tmp) / "image", as_user=cr.user(), timeout=60)
    finally:
        g.kill()
    assert res.returncode == 1, res
    assert res.stderr.count("\n") == 1 and "lock" in res.stderr, res.stderr


SERVER = """
import os, socket, socketserver, sys, threading, time
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(b"echo " + line)
srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)   # no SO_REUSEADDR
port = srv.server_address[1]
pid = os.fork()
if pid == 0:
    srv.socket.close()
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rwb")
    for i in range(12):
        f.write(b"msg %d\\n" % i); f.flush()
        sys.stdout.write(f.readline().decode()); sys.stdout.flush()
        time.sleep(0.2)
    s.close(); os._exit(0)
threading.Thread(target=srv.serve_forever, daemon=True).start()
_, st = os.waitpid(pid, 0)
srv.shutdown(); print("child", st)
"""

CLOSE_WAIT = """
import os, socket, time
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen()
port = ls.getsockname()[1]
pid = os.fork()
if pid == 0:
    ls.close()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"hello")
    time.sleep(2.5)
    print("client got", s.recv(100), s.recv(100), flush=True)
    os._exit(0)
c, _ = ls.accept()
print("server got", c.recv(100), flush=True)
c.sendall(b"bye"); c.close()
os.waitpid(pid, 0); print("done")
"""

CLOSE_WAIT_ALONE = """
import socket, time
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen()
s = socket.create_connection(ls.getsockname())
c, _ = ls.accept(); ls.close()
c.sendall(b"bye"); c.close()
print("closed", flush=True)
time.sleep(2.5)
print("got", s.recv(100), s.recv(100), flush=True)
"""


@pytest.mark.parametrize("name,text,cut", [("server", SERVER, 1.1), ("closewait", CLOSE_WAIT, 1.0),
                                           ("closewait_alone", CLOSE_WAIT_ALONE, 1.0)])
def test_tcp_cut(name, text, cut, tmp_path):
    """Checkpointed (and killed) mid-run, restored at once: the output of
    both is the native one. A server without SO_REUSEADDR listens again at
    once (the killed original's connections were reset, leaving no
    TIME_WAIT on its port); a connection whose peer closed its socket
    (close-wait, its peer an orphan) is saved as one that reads its queue
    and then the end."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = py(tmp, name + ".py", text)
    nat = zvtest.run(argv, user=cr.user(), cwd=tmp, timeout=60)
    assert nat.returncode == 0, nat
    g = start(argv, tmp)
    try:
        time.sleep(cut)
        cr.checkpoint(g.pid, Path(tmp) / "image", as_user=cr.user())
        a = g.finish(timeout=60)
    finally:
        g.kill()
    b = cr.zv("restore", Path(tmp) / "image", as_user=cr.user(), timeout=60)
    assert (a.stdout + b.stdout, b.returncode) == (nat.stdout, 0), (a, b, nat)


def test_fin_wait_unsent_refused(tmp_path):
    """A socket shut down for writing with bytes its peer has not taken
    (fin-wait-1): the bytes are in no queue the image saves, so the
    checkpoint refuses, as for an established one."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = py(tmp, "finwait.py", """
import os, socket, time
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen()
port = ls.getsockname()[1]
pid = os.fork()
if pid == 0:
    ls.close()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"x" * 300000); s.shutdown(socket.SHUT_WR)
    print("client sent", flush=True)
    print("client got", s.recv(100), flush=True)
    os._exit(0)
c, _ = ls.accept()
time.sleep(3)
n = 0
while True:
    d = c.recv(65536)
    if not d: break
    n += len(d)
c.sendall(b"total %d" % n); c.close()
os.waitpid(pid, 0); print("server got", n)
""")
    g = start(argv, tmp)
    try:
        assert g.wait_for(lambda s: "client sent" in s, 60), g.result_text()
        time.sleep(0.3)
        res = cr.zv("checkpoint", g.pid, Path(tmp) / "image", as_user=cr.user(), timeout=60)
        out = g.finish(timeout=60)
    finally:
        g.kill()
    assert res.returncode == 1 and "has not taken all that was sent" in res.stderr, res.stderr
    assert "server got 300000" in out.stdout, out.stdout
