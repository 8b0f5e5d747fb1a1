"""Checkpoint and restore (docs/CHECKPOINT.md).

Each guest of crharness.CASES ('cr_counter', 'cr_threads', cr_python.py,
'crgoguest', sqlite3 with cr_sqlite.sql, 'cr_sleepers', 'cr_listen') runs
natively for the expected output and status; then under zvisor it is cut at
a random point by `zvisor checkpoint PID DIR` and brought back by `zvisor
restore DIR`: the original's output followed by the restore's must be the
native output, with the native status. Around that: restoring twice from one
image, restoring after the original is gone, damaged images, a checkpoint
as an ordinary user, twenty --leave-running checkpoints without leaks,
--checkpoint-on=SIGUSR2, a pipe inherited from outside, and bad command
lines.

The tests that need `zvisor checkpoint` skip, with one reason, while zvisor
does not list it (crharness.core_missing); the native runs and the uncut
runs under zvisor run already. ZV_CR_SEED=N takes the same random cuts
again (every failure prints its seed)."""
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import crharness as cr
import guestdesc
import zvtest
from crharness import CASE, CASES, Running, checkpoint, zv
from zvtest import PLATFORMS

CASE_NAMES = [c.name for c in CASES]


def need_core():
    why = cr.core_missing()
    if why:
        pytest.skip(why)


def need_case(case):
    why = case.missing()
    if why:
        pytest.skip(why)


def skip_platform(platform):
    if cr.user() and platform and platform.startswith("zpoline"):
        pytest.skip("the zpoline platform needs root to map page 0, not %s" % cr.user())


def scratch(tmp_path_factory, name):
    """A new scratch directory outside the test's tmp_path, the guests'
    user's (/tmp/pytest-of-root is closed to other users)."""
    if cr.user():
        return Path(zvtest.user_tmp(cr.user()))
    return tmp_path_factory.mktemp(name)


_natives = {}


def native(case, tmp_path_factory):
    """The case's native Result, client transcript and span, once per run
    of the suite, checked against what the case expects."""
    if case.name not in _natives:
        tmp = scratch(tmp_path_factory, "native-" + case.name)
        res, said, span = cr.run_native(case, str(tmp))
        case.check(res)
        _natives[case.name] = (res, said, span)
    return _natives[case.name]


@pytest.fixture
def running():
    """Start programs with running(argv, ...); all are killed at the end."""
    started = []

    def start(argv, **kw):
        kw.setdefault("as_user", cr.user())
        g = Running(argv, **kw)
        started.append(g)
        return g

    yield start
    for g in started:
        g.kill()


def zv_run_argv(argv, platform=None, opts=()):
    return zvtest.zv_argv(argv, platform, list(opts))


# --- the guests themselves ---------------------------------------------------------

@pytest.mark.native_only
@pytest.mark.parametrize("name", CASE_NAMES)
def test_native_run(name, tmp_path_factory):
    """Each guest does natively what the tests compare with (its .desc or
    its case's check), twice with the same output."""
    case = CASE[name]
    need_case(case)
    first, said, _ = native(case, tmp_path_factory)
    again, said2, _ = cr.run_native(case, str(scratch(tmp_path_factory, "again-" + name)))
    zvtest.assert_same(first, again, "two native runs of %s differ" % name)
    assert said == said2


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", CASE_NAMES)
def test_uncut_under_zvisor(name, platform, tmp_path, tmp_path_factory, running):
    """Without a checkpoint the guest runs under zvisor as natively: what
    the cut runs are compared with holds before any checkpoint."""
    case = CASE[name]
    need_case(case)
    skip_platform(platform)
    nat, said, _ = native(case, tmp_path_factory)
    argv = case.argv(str(tmp_path))
    g = running(zv_run_argv(argv, platform), cwd=str(tmp_path))
    g.wait_first_line()
    zsaid = cr.listen_client(g, *cr.client_of(argv)) if case.client else ""
    zvtest.assert_same(nat, g.finish(), "%s under zvisor (platform %s)" % (name, platform))
    assert zsaid == said


# --- cut at a random point -------------------------------------------------------------

def cut_and_restore(case, platform, tmp, running, rng, span, images=1, restore_opts=(),
                    premade=False):
    """Run the case under zvisor, checkpoint it at a random point (which
    ends it), restore the image `images` times (`zvisor restore
    RESTORE_OPTS DIR`); returns (original's Result, [restore Results],
    [client transcripts], what happened, for messages). premade: DIR is
    made empty before the checkpoint, as CRIU's users make its -D."""
    argv = case.argv(tmp)
    g = running(zv_run_argv(argv, platform), cwd=tmp)
    g.wait_first_line()
    delay = cr.random_delay(rng, span)
    time.sleep(delay)
    where = "seed %d (ZV_CR_SEED), %s cut %.3fs after its first line, platform %s" % (
        cr.SEED, case.name, delay, platform)
    if g.proc.poll() is not None:
        pytest.fail("%s: the guest ended before its checkpoint\n%s" % (where, g.result_text()))
    image = Path(tmp) / "image"
    if premade:
        image.mkdir()
        if cr.user():
            zvtest.chown_tree(str(image), cr.user())
    checkpoint(g.pid, image, as_user=cr.user(), what=where)
    orig = g.finish(timeout=30)
    assert orig.returncode == -signal.SIGKILL, "%s: the checkpointed original ended with %s" % (
        where, zvtest.status_text(orig.returncode))
    restores, said = [], []
    for _ in range(images):
        r = running([zvtest.ZVISOR, "restore"] + list(restore_opts) + [image], cwd=tmp)
        said.append(cr.listen_client(r, *cr.client_of(argv)) if case.client else "")
        restores.append(r.finish())
    return orig, restores, said, where


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", CASE_NAMES)
def test_cut_and_restore(name, platform, tmp_path, tmp_path_factory, running, request):
    """Checkpoint at a random point, restore: the original's output and
    the restore's together are the native run's, with its status."""
    case = CASE[name]
    need_case(case)
    skip_platform(platform)
    need_core()
    nat, said, span = native(case, tmp_path_factory)
    orig, (rest,), (rsaid,), where = cut_and_restore(case, platform, str(tmp_path), running,
                                                    cr.rng_for(request.node.nodeid), span)
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, where)
    assert rsaid == said, "%s: the client's answers after the restore differ" % where


@pytest.mark.parametrize("name", CASE_NAMES)
def test_cut_and_restore_other_host(name, tmp_path, tmp_path_factory, running, request):
    """The same on the default platform with `zvisor restore --other-host`:
    as on another kernel or boot, the guest's cached vDSO pointers (glibc's,
    Go's) lead into zvisor's kernel and the clocks go on from the
    checkpoint's values (docs/CHECKPOINT.md)."""
    case = CASE[name]
    need_case(case)
    need_core()
    nat, said, span = native(case, tmp_path_factory)
    orig, (rest,), (rsaid,), where = cut_and_restore(
        case, None, str(tmp_path), running, cr.rng_for(request.node.nodeid), span,
        restore_opts=["--other-host"])
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, where + ", restore --other-host")
    assert rsaid == said, "%s: the client's answers after the restore differ" % where


def test_restore_twice(tmp_path, tmp_path_factory, running, request):
    """Two restores of one image (the original gone since the checkpoint)
    each finish the run as natively."""
    need_core()
    case = CASE["counter"]
    nat, said, span = native(case, tmp_path_factory)
    orig, rests, _, where = cut_and_restore(case, None, str(tmp_path), running,
                                            cr.rng_for(request.node.nodeid), span, images=2)
    for i, rest in enumerate(rests):
        joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr,
                               rest.returncode)
        zvtest.assert_same(nat, joined, "%s, restore %d of 2" % (where, i + 1))


def test_checkpoint_into_empty_dir(tmp_path, tmp_path_factory, running, request):
    """DIR made empty beforehand (CRIU wants its -D to exist) takes the
    image: the restore finishes the run as natively."""
    need_core()
    case = CASE["counter"]
    nat, _, span = native(case, tmp_path_factory)
    orig, (rest,), _, where = cut_and_restore(case, None, str(tmp_path), running,
                                              cr.rng_for(request.node.nodeid), span, premade=True)
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, where + ", into an empty DIR made first")


def assert_suffix(nat, rest, where):
    """A restore of an image taken with --leave-running prints the end of
    the native output, from a line's start, and ends as it."""
    lines = nat.stdout.splitlines(keepends=True)
    tails = ["".join(lines[i:]) for i in range(len(lines) + 1)]
    assert rest.stdout in tails and rest.returncode == nat.returncode and not rest.stderr, (
        "%s: the restore is not the native run's end\n%s" % (where, zvtest.explain(nat, rest)))


def test_restore_after_original_ended(tmp_path, tmp_path_factory, running, request):
    """--leave-running: the original runs on to its normal end; the image,
    restored only then, finishes the run again from the cut."""
    need_core()
    case = CASE["counter"]
    nat, _, span = native(case, tmp_path_factory)
    rng = cr.rng_for(request.node.nodeid)
    g = running(zv_run_argv(case.argv(str(tmp_path))), cwd=str(tmp_path))
    g.wait_first_line()
    time.sleep(cr.random_delay(rng, span))
    image = tmp_path / "image"
    checkpoint(g.pid, image, leave_running=True, as_user=cr.user())
    zvtest.assert_same(nat, g.finish(), "the original after a --leave-running checkpoint")
    rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
    assert_suffix(nat, rest, "seed %d: restore after the original ended" % cr.SEED)


# --- damaged images -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_image(tmp_path_factory):
    """An image of cr_counter, cut after its third line."""
    if cr.core_missing() or not zvtest.zvisor_available():
        pytest.skip(cr.core_missing() or "no zvisor")
    tmp = scratch(tmp_path_factory, "good-image")
    g = Running(zvtest.zv_argv([zvtest.guest("cr_counter")]), cwd=str(tmp), as_user=cr.user())
    try:
        g.wait_for(lambda out: out.count("\n") >= 3)
        checkpoint(g.pid, tmp / "image", as_user=cr.user())
    finally:
        g.kill()
    return tmp / "image"


def sections(image):
    return sorted(image.glob("*.bin"), key=lambda p: (-p.stat().st_size, p.name))


def truncate_largest(image):
    p = sections(image)[0]
    os.truncate(p, p.stat().st_size // 2)


def flip_largest(image):
    p = sections(image)[0]
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x40
    p.write_bytes(bytes(data))


def delete_index(image):
    (image / "index.json").unlink()


def delete_section(image):
    sections(image)[-1].unlink()


def wrong_version(image):
    """The index's version field (a top-level key naming 'version' whose
    value is a number) made one no zvisor knows."""
    path = image / "index.json"
    index = json.loads(path.read_text())
    keys = [k for k, v in index.items() if "version" in k.lower() and isinstance(v, int)]
    assert keys, "no numeric version field in index.json: %s" % sorted(index)
    for k in keys:
        index[k] += 1000
    path.write_text(json.dumps(index))


def garbage_index(image):
    (image / "index.json").write_text("{ not json")


DAMAGE = {f.__name__: f for f in (truncate_largest, flip_largest, delete_index, delete_section,
                                   wrong_version, garbage_index)}


def assert_one_line(res, what, codes=(1,)):
    """A refusal: the exit status among codes, nothing on stdout, exactly
    one `zvisor:` line on stderr; for a bad command line (2) the usage or
    a "Try 'zvisor ... --help'" hint may follow it, as for every zvisor
    command."""
    lines = res.stderr.splitlines()
    ours = [l for l in lines if l.startswith("zvisor:")]
    rest = [l for l in lines if not l.startswith("zvisor:")]
    usage_ok = res.returncode == 2 and all(l.startswith(("usage:", " ", "Try 'zvisor")) for l in rest)
    assert (res.returncode in codes and not res.stdout and len(ours) == 1
            and (not rest or usage_ok)), (
        "%s: expected one `zvisor:` line and exit %s, got %s\n--- stdout:\n%s--- stderr:\n%s"
        % (what, " or ".join(map(str, codes)), zvtest.status_text(res.returncode),
           res.stdout[-1000:], res.stderr[-2000:]))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_image_refused(damage, good_image, tmp_path):
    """A damaged image is refused with one line, before any of the guest runs."""
    image = tmp_path / "image"
    shutil.copytree(good_image, image, symlinks=True)
    DAMAGE[damage](image)
    if cr.user():
        zvtest.chown_tree(str(tmp_path), cr.user())
    res = zv("restore", image, as_user=cr.user(), timeout=30)
    assert_one_line(res, "restore of an image with %s" % damage)


def test_every_section_is_checked(good_image, tmp_path):
    """A byte flipped in any one section file is refused."""
    for sec in sections(good_image):
        image = tmp_path / ("image-" + sec.stem)
        shutil.copytree(good_image, image, symlinks=True)
        p = image / sec.name
        data = bytearray(p.read_bytes())
        if not data:
            continue
        data[-1] ^= 0x01
        p.write_bytes(bytes(data))
        if cr.user():
            zvtest.chown_tree(str(tmp_path), cr.user())
        assert_one_line(zv("restore", image, as_user=cr.user(), timeout=30),
                        "restore with a byte flipped in %s" % sec.name)


# --- an ordinary user --------------------------------------------------------------------

def reachable_copy(path, who, area):
    """path itself if who can run it, else a copy in area that it can."""
    probe = zvtest.run(["test", "-x", str(path), "-a", "-r", str(path)], user=who)
    if probe.returncode == 0:
        return str(path)
    dst = Path(area) / Path(path).name
    if not dst.exists():
        shutil.copy2(path, dst)
        zvtest.chown_tree(str(dst), who)
    return str(dst)


def test_checkpoint_as_ordinary_user(tmp_path, tmp_path_factory, running, request, monkeypatch):
    """A user without privilege (nobody, when the suite runs as root)
    checkpoints its own guest and restores it: no root, no ptrace."""
    need_core()
    who = cr.user() or ("nobody" if os.geteuid() == 0 else None)
    case = CASE["counter"]
    nat, _, span = native(case, tmp_path_factory)
    work = tmp_path
    if who:
        # the user's own directory: /tmp/pytest-of-root is closed to it
        work = Path(zvtest.user_tmp(who))
        monkeypatch.setattr(zvtest, "ZVISOR", Path(reachable_copy(zvtest.ZVISOR, who, work)))
        prog = reachable_copy(zvtest.guest("cr_counter"), who, work)
    else:
        prog = zvtest.guest("cr_counter")
    g = running(zvtest.zv_argv([prog]), cwd=str(work), as_user=who)
    g.wait_first_line()
    time.sleep(cr.random_delay(cr.rng_for(request.node.nodeid), span))
    image = work / "image"
    checkpoint(g.pid, image, as_user=who)
    orig = g.finish(timeout=30)
    if who:
        uid = zvtest.user_ids(who)[0]
        assert all(p.stat().st_uid == uid for p in [image] + list(image.iterdir())), (
            "the image is not %s's" % who)
    rest = zv("restore", image, as_user=who, cwd=str(work))
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, "seed %d: checkpoint and restore as %s" % (cr.SEED, who))


# --- many checkpoints of one guest ----------------------------------------------------------

CHAIN = 20


def test_many_checkpoints_leave_running(tmp_path, running):
    """Twenty --leave-running checkpoints of one guest: it runs on to the
    native end, its fds and memory do not grow from the first checkpoint to
    the last, and the last image restores to the native end."""
    need_core()
    long = guestdesc.get("cr_counter").run("long")
    argv = [zvtest.guest("cr_counter")] + long.argv
    nat = zvtest.run_native(argv)
    long.check(nat)
    g = running(zv_run_argv(argv), cwd=str(tmp_path))
    g.wait_first_line()
    marks, took = [], []
    for i in range(1, CHAIN + 1):
        assert g.proc.poll() is None, "the guest ended after %d checkpoints (they took %s s): %s" % (
            i - 1, took, g.result_text())
        t0 = time.monotonic()
        try:
            checkpoint(g.pid, tmp_path / ("image%02d" % i), leave_running=True, as_user=cr.user())
        except AssertionError as e:
            raise AssertionError("checkpoint %d of %d, answered after %.1f s (the ones before "
                                 "took %s s): %s" % (i, CHAIN, time.monotonic() - t0, took, e))
        took.append(round(time.monotonic() - t0, 3))
        time.sleep(0.03)  # a step or so between checkpoints: it runs on in between
        if i in (1, CHAIN):
            marks.append((g.fd_count(), g.rss_kb(), len(g.stdout().splitlines())))
    (fd1, rss1, lines1), (fdn, rssn, linesn) = marks
    orig = g.finish()
    zvtest.assert_same(nat, orig, "the original after %d --leave-running checkpoints" % CHAIN)
    assert linesn > lines1, "the guest made no progress during the checkpoints"
    assert fdn == fd1, "fds grew from %d after the first checkpoint to %d after the %dth" % (
        fd1, fdn, CHAIN)
    assert rssn - rss1 < 2048, "VmRSS grew from %d kB after the first checkpoint to %d kB " \
        "after the %dth" % (rss1, rssn, CHAIN)
    rest = zv("restore", tmp_path / ("image%02d" % CHAIN), as_user=cr.user(), cwd=str(tmp_path))
    assert_suffix(nat, rest, "restore of the %dth --leave-running image" % CHAIN)


# --- zvisor run --checkpoint-on ------------------------------------------------------------

@pytest.mark.parametrize("named_dir", [True, False], ids=["checkpoint-dir", "default-dir"])
def test_checkpoint_on_signal(named_dir, tmp_path, tmp_path_factory, running, request):
    """SIGUSR2 from outside makes the checkpoint (into --checkpoint-dir, or
    checkpoint.PID where zvisor started) and never reaches the guest, whose
    handler would print FAIL; the restore finishes the run."""
    need_core()
    case = CASE["counter"]
    nat, _, span = native(case, tmp_path_factory)
    image = tmp_path / "sig-image"
    opts = ["--checkpoint-on=SIGUSR2"] + (["--checkpoint-dir=%s" % image] if named_dir else [])
    g = running(zv_run_argv(case.argv(str(tmp_path)), opts=opts), cwd=str(tmp_path))
    g.wait_first_line()
    time.sleep(cr.random_delay(cr.rng_for(request.node.nodeid), span))
    os.kill(g.pid, signal.SIGUSR2)
    orig = g.finish(timeout=30)
    assert orig.returncode == -signal.SIGKILL, "after SIGUSR2: %s\n%s" % (
        zvtest.status_text(orig.returncode), g.result_text())
    if not named_dir:
        image = tmp_path / ("checkpoint.%d" % g.pid)
    assert (image / "index.json").is_file(), "no image at %s: %s" % (image, os.listdir(tmp_path))
    rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, "seed %d: --checkpoint-on=SIGUSR2" % cr.SEED)


# --- bad command lines and targets ---------------------------------------------------------

@pytest.mark.parametrize("args,code", [
    (["checkpoint"], 2),
    (["checkpoint", "123"], 2),
    (["checkpoint", "12x", "DIR"], 2),
    (["checkpoint", "--bogus", "123", "DIR"], 2),
    (["checkpoint", "123", "DIR", "extra"], 2),
    (["restore"], 2),
    (["restore", "--bogus", "DIR"], 2),
    (["restore", "DIR", "extra"], 2),
    (["run", "--checkpoint-on=SIGNOPE", "--", "/bin/true"], 2),
    (["restore", "DIR"], 1),            # no such directory
    (["restore", "EMPTY"], 1),          # a directory without an image
    (["restore", "FILE"], 1),           # not a directory
], ids=lambda v: v if isinstance(v, int) else " ".join(v))
def test_bad_command_line(args, code, tmp_path):
    need_core()
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "FILE").write_text("not an image\n")
    args = [str(tmp_path / a) if a in ("DIR", "EMPTY", "FILE") else
            a.replace("DIR", str(tmp_path / "DIR")) for a in args]
    res = zv(*args, as_user=cr.user(), timeout=30)
    assert_one_line(res, "zvisor " + " ".join(args), codes=(code,))
    assert not (tmp_path / "DIR").exists()


def test_checkpoint_of_a_process_that_is_no_zvisor(tmp_path, running):
    """A pid that is not a zvisor process is refused, and that process
    is left alone (never sent the request, which would kill it)."""
    need_core()
    other = running(["sleep", "30"])
    time.sleep(0.2)
    res = zv("checkpoint", other.pid, tmp_path / "image", as_user=cr.user(), timeout=30)
    assert_one_line(res, "checkpoint of sleep")
    time.sleep(0.2)
    assert other.proc.poll() is None, "sleep died: %s" % zvtest.status_text(other.proc.returncode)
    assert not (tmp_path / "image").exists()


def test_checkpoint_of_no_process(tmp_path):
    need_core()
    p = subprocess.Popen(["true"])
    p.wait()  # its pid is free now (reuse within the test is unlikely)
    res = zv("checkpoint", p.pid, tmp_path / "image", as_user=cr.user(), timeout=30)
    assert_one_line(res, "checkpoint of a pid that does not exist")
    assert not (tmp_path / "image").exists()


def test_checkpoint_into_existing_dir(tmp_path, tmp_path_factory, running):
    """DIR exists and holds a file: refused with one line, DIR untouched,
    the guest runs on to its native end."""
    need_core()
    case = CASE["counter"]
    nat, _, _ = native(case, tmp_path_factory)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine").write_text("keep\n")
    if cr.user():
        zvtest.chown_tree(str(tmp_path), cr.user())
    g = running(zv_run_argv(case.argv(str(tmp_path))), cwd=str(tmp_path))
    g.wait_first_line()
    res = zv("checkpoint", g.pid, taken, as_user=cr.user(), timeout=30)
    assert_one_line(res, "checkpoint into an existing directory")
    assert os.listdir(taken) == ["mine"]
    zvtest.assert_same(nat, g.finish(), "the guest after a refused checkpoint")


def test_checkpoint_with_an_outside_pipe(tmp_path, tmp_path_factory, running):
    """The guest inherited the write end of a pipe read outside it (as a
    shell or a job runner leaves one open): the checkpoint ends, saving the
    image (restored: the native end) or refusing with one line (the guest
    runs on to its native end), and never spins with the guest frozen."""
    need_core()
    case = CASE["counter"]
    nat, _, _ = native(case, tmp_path_factory)
    r, w = os.pipe()
    try:
        g = running(zv_run_argv(case.argv(str(tmp_path))), cwd=str(tmp_path), pass_fds=(w,))
    finally:
        os.close(w)
    try:
        g.wait_first_line()
        image = tmp_path / "image"
        res = zv("checkpoint", g.pid, image, as_user=cr.user(), timeout=30)
        if res.returncode != 0:
            assert_one_line(res, "checkpoint of a guest holding an outside pipe")
            assert not image.exists()
            zvtest.assert_same(nat, g.finish(), "the guest after a refused checkpoint")
            return
        orig = g.finish(timeout=30)
        rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
        joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr,
                               rest.returncode)
        zvtest.assert_same(nat, joined, "checkpoint of a guest holding an outside pipe")
    finally:
        os.close(r)


# --- edges: shared memory, futex timeouts, a blocked --checkpoint-on signal (cr_edges) -------

EDGES = "cr_edges"


def edges_argv(mode, *args):
    return [zvtest.guest(EDGES), mode] + [str(a) for a in args]


def edges_native(mode, *args):
    argv = edges_argv(mode, *args)
    nat = zvtest.run_native(argv)
    guestdesc.get(EDGES).run(mode).check(nat)
    return argv, nat


def edges_cut(argv, platform, tmp_path, running, what):
    """The cr_edges guest checkpointed after its first line, then restored:
    the original's output and the restore's, joined."""
    g = running(zv_run_argv(argv, platform), cwd=str(tmp_path))
    g.wait_first_line()
    image = tmp_path / "image"
    checkpoint(g.pid, image, as_user=cr.user(), what=what)
    orig = g.finish(timeout=30)
    rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
    return zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)


@pytest.mark.parametrize("platform", [None, "stubs"])
def test_sysv_shm_comes_back(platform, tmp_path, running):
    """A SysV shared memory segment (shmat, removed while attached) is
    saved with its contents, key, size and mode and made again at
    restore, attached where it was: the guest goes on reading it, and the
    id it knows still names it (shmctl IPC_STAT; the host's is new)."""
    need_core()
    argv, nat = edges_native("shm")
    joined = edges_cut(argv, platform, tmp_path, running, "a SysV shm segment")
    zvtest.assert_same(nat, joined, "a SysV shm segment, restored")


# SysV calls of the test itself, for the segment a restore meets in place.
_LIBC = None


def _sysv(name, *args):
    global _LIBC
    if _LIBC is None:
        import ctypes
        _LIBC = ctypes.CDLL(None, use_errno=True)
        _LIBC.shmat.restype = ctypes.c_void_p
    return getattr(_LIBC, name)(*args)


def shm_key():
    """A key of this test run's own."""
    return 0x5a560000 | (os.getpid() & 0xffff)


def shm_remove(key):
    subprocess.run(["ipcrm", "-M", "0x%x" % key], stderr=subprocess.DEVNULL)


def test_sysv_key_taken_over(tmp_path, running):
    """A segment with a key, left by the checkpointed original (killed, no
    process attached, the same size), is emptied and taken over by the
    restore: the program goes on with the image's contents, finds it by its
    id and its key, and removes it at its end as natively."""
    need_core()
    key = shm_key()
    try:
        argv, nat = edges_native("shmkey", "%x" % key)
        joined = edges_cut(argv, None, tmp_path, running, "a SysV shm segment with a key")
    finally:
        shm_remove(key)
    zvtest.assert_same(nat, joined, "a SysV shm segment with a key, taken over")


@pytest.mark.parametrize("other", ["attached", "size"])
def test_sysv_key_in_use(other, tmp_path, running):
    """The key is held at restore by a segment the restore cannot take: one
    still attached (here by the test), or one of another size: refused with
    one line naming the key and how to free it."""
    need_core()
    key = shm_key()
    at = None
    try:
        g = running(zv_run_argv(edges_argv("shmkey", "%x" % key), None), cwd=str(tmp_path))
        g.wait_first_line()
        image = tmp_path / "image"
        checkpoint(g.pid, image, as_user=cr.user(), what="a SysV shm segment with a key")
        g.finish(timeout=30)
        sid = _sysv("shmget", key, 0, 0)
        if other == "attached":
            at = _sysv("shmat", sid, None, 0)
            assert at not in (None, 2**64 - 1)
        else:
            _sysv("shmctl", sid, 0, None)  # IPC_RMID
            assert _sysv("shmget", key, 4096, 0o1666) >= 0  # IPC_CREAT
        rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
    finally:
        if at:
            _sysv("shmdt", at)
        shm_remove(key)
    how = "attached" if other == "attached" else "of another size"
    assert rest.returncode == 1 and rest.stdout == "", rest
    assert rest.stderr == ("zvisor: restore: SysV shared memory key 0x%x: another segment has it, %s "
                           "(ipcrm -M 0x%x removes it)\n" % (key, how, key)), rest.stderr


@pytest.mark.parametrize("platform", [None, "stubs"])
def test_shared_file_mapping(platform, tmp_path, running):
    """A MAP_SHARED mapping of a file is saved by its path (the file holds
    its pages) and mapped shared again: a write through it after the
    restore is in the file."""
    need_core()
    if cr.user():
        zvtest.chown_tree(str(tmp_path), cr.user())
    argv, nat = edges_native("shfile", tmp_path)
    joined = edges_cut(argv, platform, tmp_path, running, "a MAP_SHARED file mapping")
    zvtest.assert_same(nat, joined, "a MAP_SHARED file mapping, restored")


@pytest.mark.parametrize("restore_opts", [[], ["--other-host"]], ids=["same-host", "other-host"])
def test_futex_timeouts_go_on(restore_opts, tmp_path, running):
    """Two threads in 2 s futex waits, cut at about 1 s: after the restore
    the relative wait (FUTEX_WAIT) goes on with the time it had left, and
    the absolute one (FUTEX_WAIT_BITSET on MONOTONIC) keeps its deadline in
    the guest's time, also where virtual time continues the clocks
    (--other-host); neither wakes early (the guest checks), and both wake
    about 1 s after the restore, not 2 (a loose bound: semantics, not
    speed)."""
    need_core()
    argv, nat = edges_native("futex")
    g = running(zv_run_argv(argv), cwd=str(tmp_path))
    g.wait_first_line()
    time.sleep(1.0)
    image = tmp_path / "image"
    checkpoint(g.pid, image, as_user=cr.user(), what="two threads in futex waits")
    orig = g.finish(timeout=30)
    t0 = time.monotonic()
    rest = zv(*(["restore"] + restore_opts + [image]), as_user=cr.user(), cwd=str(tmp_path))
    took = time.monotonic() - t0
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, "futex waits cut at 1 s, restore %s" % restore_opts)
    assert took < 1.8, "the restored futex waits took %.2f s: restarted with the whole 2 s" % took


def edges_raising_usr2(mode, platform, tmp_path, what):
    """cr_edges MODE under --checkpoint-on=USR2 --leave-running (the guest
    raises SIGUSR2, blocked): the original gives the native output, and the
    restore of its image the native output's end, which it returns."""
    need_core()
    argv, nat = edges_native(mode)
    image = str(tmp_path / "image")
    orig = zvtest.run_zv(argv, platform, ["--checkpoint-on=USR2", "--checkpoint-dir=" + image,
                                          "--leave-running"], cwd=str(tmp_path))
    zvtest.assert_same(nat, orig, "the original under zvisor --checkpoint-on=USR2")
    assert os.path.isdir(image), "no image written: " + orig.stderr
    rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
    assert_suffix(nat, rest, "restore of " + what)
    return rest


@pytest.mark.parametrize("platform", [None, "stubs"])
def test_blocked_checkpoint_signal(platform, tmp_path):
    """A guest that blocks zvisor's --checkpoint-on signal still gets
    checkpointed by it, yet reads its mask back as it set it: the old set
    of sigprocmask, a new thread's mask, a handler's frame."""
    rest = edges_raising_usr2("mask", platform, tmp_path, "a guest that blocks SIGUSR2")
    assert rest.stdout.startswith("after:"), rest.stdout


@pytest.mark.parametrize("platform", [None, "sud"])
def test_procview_after_restore(platform, tmp_path):
    """After a restore /proc/self/maps names the guest's stack [stack] and
    shows no zvisor region, and status shows the mask and handlers the guest
    set: --checkpoint-on's signal (blocked by the guest here) neither caught
    nor hidden from SigBlk (sys/procview.c)."""
    rest = edges_raising_usr2("procview", platform, tmp_path, "a guest that reads its maps and status")
    assert rest.stdout.startswith("after: maps: [stack] 1, in zvisor's window 0"), rest.stdout


@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd program is not installed")
def test_images_compressed_when_it_pays_off(tmp_path, running):
    """By default (--compress=auto) an image whose pages compress well is
    stored with zstd; --no-compress stores it plain; either way the heap's
    zero pages are left out (8 MiB of text is saved, not the 8 MiB of zeros
    beside it: holes of pages.bin where the mapping is placed), and each
    image restores to the native end."""
    need_core()
    argv, nat = edges_native("heap")
    for opts, stored in (([], "pages.bin.zst"), (["--no-compress"], "pages.bin")):
        g = running(zv_run_argv(argv), cwd=str(tmp_path))
        g.wait_first_line()
        image = tmp_path / ("image" + "".join(opts))
        res = zv(*(["checkpoint"] + opts + [g.pid, image]), as_user=cr.user(), timeout=60)
        assert res.returncode == 0, res.stderr
        orig = g.finish(timeout=30)
        files = {p.name: p.stat().st_size for p in image.iterdir()}
        assert [f for f in files if f.startswith("pages")] == [stored], files
        if opts:
            # what the file holds: a placed mapping's unsaved pages are holes
            held = (image / "pages.bin").stat().st_blocks * 512
            assert held < 12 << 20, "zero pages saved: %d bytes held, %s" % (held, files)
        else:
            assert files["pages.bin.zst"] < 4 << 20, files
        rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
        joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
        zvtest.assert_same(nat, joined, "zvisor checkpoint %s of a compressible heap" % opts)


@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd program is not installed")
@pytest.mark.parametrize("platform,stored", [(None, "pages.bin.zst"), ("sud", "pages.bin.zst"),
                                             ("seccomp", "pages.bin")])
def test_checkpoint_on_images_compressed(platform, stored, tmp_path, running):
    """--checkpoint-on's images follow --compress=auto as `zvisor
    checkpoint`'s do: a compressible heap is stored as pages.bin.zst, and the
    image restores to the native end. On the seccomp platform the zstd child
    inherits the filter, which kills it: the image stays plain."""
    need_core()
    argv, nat = edges_native("heap")
    image = tmp_path / "image"
    g = running(zv_run_argv(argv, platform, ["--checkpoint-on=SIGUSR2", "--checkpoint-dir=%s" % image]),
                cwd=str(tmp_path))
    g.wait_first_line()
    os.kill(g.pid, signal.SIGUSR2)
    orig = g.finish(timeout=60)
    assert orig.returncode == -signal.SIGKILL, "after SIGUSR2: %s\n%s" % (
        zvtest.status_text(orig.returncode), g.result_text())
    files = {p.name: p.stat().st_size for p in image.iterdir()}
    assert [f for f in files if f.startswith("pages")] == [stored], files
    rest = zv("restore", image, as_user=cr.user(), cwd=str(tmp_path))
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, "--checkpoint-on=SIGUSR2 of a compressible heap")


def test_restored_program_file_stays_busy(tmp_path, running):
    """A restored process marks its program file again (sys/txtbusy.c): a
    hosted writer gets ETXTBSY from it as from the original, and none once
    the restored process is gone."""
    need_core()
    prog = tmp_path / "counter"
    shutil.copy(zvtest.guest("cr_counter"), prog)
    os.chmod(tmp_path, 0o777)

    def write_it():
        r = zvtest.run(zvtest.zv_argv(["sh", "-c", "exec 3>>counter && echo writable"]), user=cr.user(),
                       cwd=str(tmp_path))
        return r.stdout + r.stderr

    g = running(zv_run_argv([str(prog), "400", "25"]), cwd=str(tmp_path))
    g.wait_first_line()
    assert "Text file busy" in write_it()
    image = tmp_path / "image"
    checkpoint(g.pid, image, as_user=cr.user())
    g.finish(timeout=30)
    assert "writable" in write_it()
    rest = running([str(zvtest.ZVISOR), "restore", str(image)], cwd=str(tmp_path))
    rest.wait_first_line()
    assert "Text file busy" in write_it()
    rest.kill()
    rest.finish(timeout=30)
    assert "writable" in write_it()
