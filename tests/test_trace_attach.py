"""`zvisor trace -p PID`: a running hosted process is traced from then on,
as strace -p does, and goes on untraced after Ctrl-C (trace/remote.c)."""
import os
import signal
import subprocess
import time

from zvtest import ZVISOR

LOOP = "while :; do /bin/sleep 0.05; done"


def start(script=LOOP):
    p = subprocess.Popen([str(ZVISOR), "run", "--", "/bin/sh", "-c", script])
    time.sleep(0.5)  # past its start
    return p


def trace(pid, out, opts=(), secs=1.0):
    t = subprocess.Popen([str(ZVISOR), "trace"] + list(opts) + ["-o", str(out), "-p", str(pid)],
                         stderr=subprocess.PIPE, text=True)
    time.sleep(secs)
    t.send_signal(signal.SIGINT)
    err = t.communicate(timeout=30)[1]
    return t.returncode, err


def test_attach_follow_detach(tmp_path):
    out = tmp_path / "t.txt"
    p = start()
    try:
        rc, err = trace(p.pid, out, ["-f"])
        assert rc == 0, err
        assert "Process %d attached" % p.pid in err and "Process %d detached" % p.pid in err, err
        text = out.read_text()
        assert 'execve("/bin/sleep", ["/bin/sleep", "0.05"]' in text, text  # -f: its children
        assert "wait4(" in text, text
        size = out.stat().st_size
        time.sleep(0.5)
        assert p.poll() is None, "the program stopped running"
        assert out.stat().st_size == size, "lines after the detach"
    finally:
        p.kill()
        p.wait()


def test_attach_without_f_traces_the_process_alone(tmp_path):
    out = tmp_path / "t.txt"
    p = start()
    try:
        rc, err = trace(p.pid, out)
        assert rc == 0, err
        text = out.read_text()
        assert "wait4(" in text and ("clone(" in text or "fork(" in text), text
        assert "execve(" not in text, text
    finally:
        p.kill()
        p.wait()


def test_the_command_ends_with_the_process(tmp_path):
    out = tmp_path / "t.txt"
    p = start("/bin/sleep 1; exit 3")
    t = subprocess.run([str(ZVISOR), "trace", "-o", str(out), "-p", str(p.pid)], stderr=subprocess.PIPE,
                       text=True, timeout=30)
    assert p.wait(timeout=30) == 3
    assert t.returncode == 0, t.stderr
    assert "+++ exited with 3 +++" in out.read_text()


def test_refused(tmp_path):
    native = subprocess.Popen(["sleep", "10"])
    try:
        t = subprocess.run([str(ZVISOR), "trace", "-p", str(native.pid)], stderr=subprocess.PIPE, text=True,
                           timeout=30)
        assert t.returncode == 1 and "does not run under zvisor" in t.stderr, t.stderr
        assert native.poll() is None, "a process outside zvisor was signalled"
    finally:
        native.kill()
        native.wait()
    t = subprocess.run([str(ZVISOR), "trace", "-p", "12x"], stderr=subprocess.PIPE, text=True)
    assert t.returncode == 2 and "is not a process id" in t.stderr
    t = subprocess.run([str(ZVISOR), "trace", "-p", str(2**22 - 7)], stderr=subprocess.PIPE, text=True)
    assert t.returncode == 1 and "does not exist" in t.stderr, t.stderr
    t = subprocess.run([str(ZVISOR), "trace", "-p", "1", "--", "true"], stderr=subprocess.PIPE, text=True)
    assert t.returncode == 2 and "not supported" in t.stderr
