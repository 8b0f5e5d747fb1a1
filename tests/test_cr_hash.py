"""A large heap and threads across checkpoints (docs/DESIGN.md "What a
checkpoint spends its time on": the dump's own memory mapped before the
maps are read, its list emptied at each checkpoint). The guest
cr_heapthreads (a heap, a buffer per thread, and threads that count
/proc/self/task's links every millisecond; the main thread lists it after
each cut) is cut twice on each platform and restored each time; its output
joined over the cuts must be the native one: memory back exactly, and no
count of its tasks ever saw a thread of the kernel's. With --leave-running,
the host's task list holds the guest's threads alone once the command
returns, at the first checkpoint and at the next. The image restores with
--eager (which checks the hash of every page), and a byte flipped in
pages.bin is then refused with one line."""
import json
import os
import random
import shutil
import signal
from pathlib import Path

import pytest

import crharness as cr
import crimage
import zvtest

GUEST = "cr_heapthreads"
MARKERS = ["ready", "ready 2"]
TASKS = 4  # the guest's main thread and its three counters

def native(tmp):
    return cr.staged_native_once(GUEST, MARKERS, tmp)


def host_tasks(pid):
    return len(os.listdir("/proc/%d/task" % pid))


@pytest.mark.parametrize("platform", zvtest.PLATFORMS)
def test_heap_and_threads_cut_twice(platform, tmp_path):
    """Cut at each marker, restored each time: the native output."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native(tmp)
    argv = zvtest.zv_argv([zvtest.guest(GUEST)], platform)
    joined, _ = cr.staged_cuts(argv, MARKERS, tmp, as_user=cr.user())
    zvtest.assert_same(nat, joined, "%s cut twice on %s" % (GUEST, platform))


def test_leave_running_leaves_no_thread(tmp_path):
    """Two --leave-running checkpoints: after each the host lists the
    guest's threads alone, the guest never counts another, it runs to the
    native end, and the second image restores to the native end."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native(tmp)
    g = cr.Running(zvtest.zv_argv([zvtest.guest(GUEST)]), cwd=tmp, as_user=cr.user())
    try:
        for n, m in enumerate(MARKERS, 1):
            assert g.wait_for(cr.said_line(m), 60), "never said %r\n%s" % (m, g.result_text())
            assert host_tasks(g.pid) == TASKS
            cr.checkpoint(g.pid, Path(tmp) / ("image%d" % n), leave_running=True,
                          as_user=cr.user())
            assert host_tasks(g.pid) == TASKS, "a thread outlived checkpoint %d: %s" % (
                n, os.listdir("/proc/%d/task" % g.pid))
            os.kill(g.pid, signal.SIGUSR1)
        orig = g.finish()
    finally:
        g.kill()
    zvtest.assert_same(nat, orig, "%s after two --leave-running checkpoints" % GUEST)
    r = cr.Running([zvtest.ZVISOR, "restore", str(Path(tmp) / "image2")], cwd=tmp,
                   as_user=cr.user())
    try:
        cr.signals_held(r.pid)
        os.kill(r.pid, signal.SIGUSR1)
        rest = r.finish()
    finally:
        r.kill()
    tail = nat.stdout[nat.stdout.index("ready 2\n") + len("ready 2\n"):]
    assert rest.returncode == 0 and rest.stdout == tail, (
        "restore of the second --leave-running image: %s\n--- expected:\n%s--- got:\n%s%s"
        % (zvtest.status_text(rest.returncode), tail, rest.stdout, rest.stderr))


def test_damaged_pages_refused(tmp_path):
    """The image restores with --eager; a byte flipped in its pages.bin,
    past the part hashed before the thread started, is refused with one
    line and nothing run."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    g = cr.Running(zvtest.zv_argv([zvtest.guest(GUEST)]), cwd=tmp, as_user=cr.user())
    try:
        assert g.wait_for(cr.said_line("ready"), 60), g.result_text()
        cr.checkpoint(g.pid, Path(tmp) / "image", as_user=cr.user())
        g.finish(timeout=30)
    finally:
        g.kill()
    good = Path(tmp) / "image"
    r = cr.Running([zvtest.ZVISOR, "restore", "--eager", str(good)], cwd=tmp, as_user=cr.user())
    try:
        cr.signals_held(r.pid)
        os.kill(r.pid, signal.SIGUSR1)
        assert r.wait_for(cr.said_line("ready 2"), 60), r.result_text()
        os.kill(r.pid, signal.SIGUSR1)
        res = r.finish()
    finally:
        r.kill()
    assert res.returncode == 0 and "FAIL" not in res.stdout, res.stdout + res.stderr
    # tests/crimage.py's hash is cr/image.c's: every whole section's hash agrees
    index = json.loads((good / "index.json").read_text())
    for sec in index["sections"]:
        if "data" not in sec and "stored" not in sec:
            data = (good / (sec["name"] + ".bin")).read_bytes()
            assert "%016x" % crimage.image_hash(data) == sec["hash"], sec["name"]
    bad = Path(tmp) / "bad"
    shutil.copytree(good, bad)
    pages = bad / "pages.bin"
    os.chmod(pages, 0o600)
    data = bytearray(pages.read_bytes())
    at = len(data) * 3 // 4
    while not data[at]:  # a byte of data, not of a hole
        at += 1
    data[at] ^= 0x40
    pages.write_bytes(bytes(data))
    os.chmod(pages, 0o400)
    if cr.user():
        zvtest.chown_tree(str(bad), cr.user())
    res = cr.zv("restore", "--eager", bad, as_user=cr.user(), timeout=60)
    lines = res.stderr.splitlines()
    assert (res.returncode == 1 and not res.stdout and len(lines) == 1
            and lines[0].startswith("zvisor:") and "pages.bin" in lines[0]), (
        "a flipped byte in pages.bin: %s\n--- stdout:\n%s--- stderr:\n%s"
        % (zvtest.status_text(res.returncode), res.stdout[-1000:], res.stderr[-2000:]))


def test_one_word_of_damage_always_found():
    """The hash (cr/image.c, mirrored by tests/crimage.py, checked against
    it above) takes each 8-byte word through a bijection of its lane: any
    damage within one word changes it, wherever the word is in its 64-byte
    block or in the tail."""
    rng = random.Random(7)
    data = bytes(rng.getrandbits(8) for _ in range(64 * 5 + 23))
    good = crimage.image_hash(data)
    for at in range(len(data)):
        for bit in (0, 7):
            bad = bytearray(data)
            bad[at] ^= 1 << bit
            assert crimage.image_hash(bytes(bad)) != good, (at, bit)
    word = bytearray(data)
    word[64 * 2 + 8:64 * 2 + 16] = bytes(8)  # a whole word zeroed
    assert crimage.image_hash(bytes(word)) != good
    assert crimage.image_hash(data[:-1]) != good
