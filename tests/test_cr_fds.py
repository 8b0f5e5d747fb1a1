"""Checkpoint/restore of the host's resources (kernel/cr/fds*.c, timers.c,
docs/CHECKPOINT.md): the crfds guest opens one fd of each kind the image
keeps (a half-read file and its dup, an append-only log, a read lock, a
pipe with bytes in it, eventfd, timerfd, epoll, listening TCP and Unix
sockets, a memfd, a pty's master and terminal, a flock'ed file deleted
while open and an O_TMPFILE), a POSIX timer, umask and cwd, then raises zvisor's
--checkpoint-on signal. The original goes on (--leave-running); a restore
of the image must print what the original printed after "ready", and exit
as it did, twice from the same image."""
import os

import pytest

import zvtest

GUEST = "crfds"


def ready(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return os.path.realpath(d)


@pytest.mark.parametrize("platform", zvtest.PLATFORMS)
def test_fds_come_back(tmp_path, platform):
    native = zvtest.run_native([zvtest.guest(GUEST), ready(tmp_path, "native")])
    assert native.returncode == 7 and native.stdout.startswith("ready\n"), zvtest.explain(native, native)
    work = ready(tmp_path, "zv")
    image = str(tmp_path / "image")
    env = dict(os.environ, CRFDS_CHECKPOINT="1")
    orig = zvtest.run_zv([zvtest.guest(GUEST), work], platform,
                         ["--checkpoint-on=USR2", "--checkpoint-dir=" + image, "--leave-running"], env=env)
    zvtest.assert_same(native, orig, "the original under zvisor")
    assert os.path.isdir(image), "no image written: " + orig.stderr
    after = native.stdout[len("ready\n"):]
    for attempt in (1, 2):
        r = zvtest.run([zvtest.ZVISOR, "restore", image], user=zvtest.TEST_USER)
        assert (r.stdout, r.returncode) == (after, 7), "restore %d: rc %s\n--- out\n%s--- want\n%s--- err\n%s" % (
            attempt, r.returncode, r.stdout, after, r.stderr)


def test_file_written_since_refused(tmp_path):
    """A file the image holds open, written since the checkpoint without
    changing its size (a database's page rewritten): the restore refuses it
    with one line that says it was written to, not a size that did not
    change."""
    work = ready(tmp_path, "zv")
    image = str(tmp_path / "image")
    env = dict(os.environ, CRFDS_CHECKPOINT="1")
    orig = zvtest.run_zv([zvtest.guest(GUEST), work], None,
                         ["--checkpoint-on=USR2", "--checkpoint-dir=" + image, "--leave-running"], env=env)
    assert orig.returncode == 7 and os.path.isdir(image), orig.stderr
    path = os.path.join(work, "file")
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.write(b"X")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000000))
    r = zvtest.run([zvtest.ZVISOR, "restore", image], user=zvtest.TEST_USER)
    assert r.returncode == 1 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr == "zvisor: restore: fd 3 (%s): the file changed since the checkpoint " \
                       "(written to: its mtime moved)\n" % path, r.stderr
