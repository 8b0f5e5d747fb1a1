"""Helpers for zvisor's differential tests: run a program natively and under
zvisor, and compare what a user would see (stdout, stderr, exit status or
terminating signal)."""
import atexit
import difflib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
ZVISOR = REPO / "build" / "zvisor"
GUEST_DIR = REPO / "tests" / "guests" / "build"
# stubs: the default (jump stubs made when code is mapped); zpoline: the
# opt-in page-0 platform, lazy; zpoline-load: the same with --rewrite=load
# (sites rewritten when their code is mapped, not when they first run).
PLATFORMS = ["stubs", "zpoline", "zpoline-load", "sud", "seccomp"]
DEFAULT_TIMEOUT = 60
# ZV_TEST_PLATFORMS=stubs,sud: conftest.py deselects the tests of the other
# platforms (a shorter pass, such as make check-rootless). PLATFORMS stays
# whole: tests are parametrized and .desc files checked against it.
SELECTED_PLATFORMS = PLATFORMS
if os.environ.get("ZV_TEST_PLATFORMS"):
    SELECTED_PLATFORMS = os.environ["ZV_TEST_PLATFORMS"].split(",")
    for _p in SELECTED_PLATFORMS:
        if _p not in PLATFORMS:
            raise SystemExit("ZV_TEST_PLATFORMS: unknown platform %r (known: %s)"
                             % (_p, ", ".join(PLATFORMS)))
# ZV_TEST_USER=NAME: run_native and run_zv run both commands as that user
# (through setpriv, so the suite itself runs as root), as an ordinary user
# without privilege would run them: make check-rootless.
TEST_USER = os.environ.get("ZV_TEST_USER") or None


class Result(NamedTuple):
    stdout: str
    stderr: str
    returncode: int  # < 0: killed by that signal, as in subprocess


class Timeout(AssertionError):
    pass


def status_text(rc):
    """'exit 3' or 'killed by SIGSEGV'."""
    if rc < 0:
        try:
            return "killed by " + signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


def zvisor_available():
    return ZVISOR.is_file() and os.access(ZVISOR, os.X_OK)


def guest(name):
    """Path of a built guest program (tests/guests/build/NAME)."""
    return str(GUEST_DIR / name)


# --- running as another user ---------------------------------------------------

def runs_as_root():
    """Whether run_native and run_zv run with root's privileges."""
    return TEST_USER is None and os.geteuid() == 0


def user_ids(user):
    """(uid, gid) of a user name or number: its primary group."""
    pw = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(user)
    return pw.pw_uid, pw.pw_gid


def as_user(argv, user):
    """argv run as `user` with its primary group and no other groups (the
    caller must be root)."""
    uid, gid = user_ids(user)
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups"] + list(argv)


def chown_tree(path, user):
    """Give path and everything below it to user (a symlink itself, never
    what it points to)."""
    uid, gid = user_ids(user)
    os.lchown(path, uid, gid)
    for top, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(top, n), uid, gid)


_areas = {}


def user_area(user):
    """A directory of this process that belongs to user, made on first use
    and removed at exit: home/ (its HOME), cache/ (its XDG_CACHE_HOME, empty
    at the start of the run like the suite's own) and scratch dirs."""
    if user not in _areas:
        area = tempfile.mkdtemp(prefix="zvisor-test-%s-" % user)
        atexit.register(shutil.rmtree, area, True)
        os.chmod(area, 0o755)
        for sub in ("home", "cache"):
            os.mkdir(os.path.join(area, sub))
        chown_tree(area, user)
        _areas[user] = area
    return _areas[user]


def user_tmp(user):
    """A new empty directory that belongs to user."""
    d = tempfile.mkdtemp(dir=user_area(user), prefix="tmp-")
    chown_tree(d, user)
    return d


# Trees handed to the test user before each of its runs: the running test's
# tmp_path (conftest.py), so that what the test or a setup() made there as
# root is the user's, as if the user had made it.
user_trees = []


# ZV_TEST_HOME=PATH: the user's HOME is PATH and it has no XDG_CACHE_HOME
# (make check-rootless: HOME=/nonexistent, as a daemon or nobody has), so
# zvisor keeps its cache in /tmp/zvisor-UID.
TEST_HOME = os.environ.get("ZV_TEST_HOME") or None


def _user_env(env, user):
    """env with HOME and XDG_CACHE_HOME in the user's area (or ZV_TEST_HOME
    and no XDG_CACHE_HOME), unless the test chose them itself."""
    env = dict(os.environ if env is None else env)
    area = user_area(user)
    for key, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "cache")):
        if env.get(key) == os.environ.get(key):
            env[key] = os.path.join(area, sub)
            if TEST_HOME:
                if key == "HOME":
                    env[key] = TEST_HOME
                else:
                    del env[key]
    return env


def user_command(argv, env=None, cwd=None, user=None):
    """(argv, env, cwd) to start argv as user (None: as this process): the
    trees of user_trees handed to it, its HOME and cache, its HOME as the
    working directory unless cwd is given."""
    if user is None:
        return [str(a) for a in argv], env, cwd
    for tree in user_trees:
        chown_tree(tree, user)
    env = _user_env(env, user)
    cwd = cwd or os.path.join(user_area(user), "home")
    return as_user([str(a) for a in argv], user), env, cwd


def run(argv, timeout=DEFAULT_TIMEOUT, input=None, env=None, cwd=None, user=None):
    """Run argv; return Result. The child gets its own session so that a
    timeout kills everything it started. user: run it as that user (see
    as_user), in its HOME unless cwd is given."""
    argv, env, cwd = user_command(argv, env, cwd, user)
    proc = subprocess.Popen(
        [str(a) for a in argv],
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(
            input=input.encode() if isinstance(input, str) else input, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        raise Timeout(
            "timed out after %ss: %s\n--- stdout (tail):\n%s\n--- stderr (tail):\n%s"
            % (timeout, " ".join(map(str, argv)), _tail(out), _tail(err))
        )
    return Result(
        out.decode("utf-8", "surrogateescape"),
        err.decode("utf-8", "surrogateescape"),
        proc.returncode,
    )


def _tail(b, n=2000):
    s = b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")
    return s[-n:]


def platform_opts(platform):
    """zvisor's options for one of PLATFORMS."""
    if platform is None:
        return []
    if platform.endswith("-load"):
        return ["--platform=" + platform[:-5], "--rewrite=load"]
    return ["--platform=" + platform]


def zv_argv(argv, platform=None, extra_opts=()):
    cmd = [str(ZVISOR), "run"] + platform_opts(platform)
    cmd += list(extra_opts)
    cmd.append("--")
    return cmd + [str(a) for a in argv]


def run_native(argv, **kw):
    return run(argv, user=TEST_USER, **kw)


def run_zv(argv, platform=None, extra_opts=(), **kw):
    if TEST_USER and platform and platform.startswith("zpoline"):
        # page 0 needs CAP_SYS_RAWIO: an ordinary user gets the stubs
        # platform and a note (test_stubs.py checks that, as nobody)
        import pytest
        pytest.skip("the zpoline platform needs root to map page 0, not %s" % TEST_USER)
    return run(zv_argv(argv, platform, extra_opts), user=TEST_USER, **kw)


def _diff(a, b, name):
    if a == b:
        return ""
    lines = list(
        difflib.unified_diff(
            a.splitlines(keepends=True),
            b.splitlines(keepends=True),
            "native " + name,
            "zvisor " + name,
            n=2,
        )
    )
    text = "".join(lines)
    if len(text) > 4000:
        text = text[:4000] + "\n... (diff cut)\n"
    return text


def explain(native, zv, what=""):
    """A readable account of how two Results differ."""
    parts = ["%snative: %s, zvisor: %s" % (what and what + "\n", status_text(native.returncode),
                                          status_text(zv.returncode))]
    for name in ("stdout", "stderr"):
        d = _diff(getattr(native, name), getattr(zv, name), name)
        if d:
            parts.append(d)
    return "\n".join(parts)


def assert_same(native, zv, what=""):
    if native != zv:
        raise AssertionError(explain(native, zv, what))


def compare(argv, platform, extra_opts=(), normalize=None, normalize_stderr=None,
            expect_native=None, setup=None, **kw):
    """Run argv natively and under zvisor on `platform`; assert the same
    stdout, stderr and exit status/signal. normalize(text) is applied to both
    stdouts (and normalize_stderr to both stderrs) for what legitimately
    differs between two runs (pids, temp names). expect_native(result) may
    assert the native run is what the test expects, so a broken test does not
    pass by comparing two failures. setup() runs before each of the two runs
    (to recreate files the program changes). Returns (native, zvisor)."""
    if setup:
        setup()
    native = run_native(argv, **kw)
    if expect_native:
        expect_native(native)
    if setup:
        setup()
    zv = run_zv(argv, platform, extra_opts, **kw)
    n, z = native, zv
    if normalize:
        n = n._replace(stdout=normalize(n.stdout))
        z = z._replace(stdout=normalize(z.stdout))
    if normalize_stderr:
        n = n._replace(stderr=normalize_stderr(n.stderr))
        z = z._replace(stderr=normalize_stderr(z.stderr))
    assert_same(n, z, "command: " + " ".join(map(str, argv)) + " (platform %s)" % platform)
    return native, zv


def native_ok(code=0):
    """An expect_native that checks the native exit status."""

    def check(res):
        assert res.returncode == code, "native run itself failed: %s\n%s%s" % (
            status_text(res.returncode), res.stdout[-2000:], res.stderr[-2000:])

    return check


# --count output -----------------------------------------------------------

_DASHES = re.compile(r"^-+( +-+)+\s*$")


def parse_count_table(text):
    """Parse a `zvisor --count` or `strace -c` table at the end of text into
    {name: (calls, errors)}; the total row is returned under 'total'."""
    lines = text.splitlines()
    start = None
    for i in range(len(lines) - 1, -1, -1):
        l = lines[i]
        if re.search(r"\bcalls\s+errors\s+syscall\s*$", l):
            start = i
            break
    if start is None:
        raise AssertionError("no syscall count table in:\n" + text[-3000:])
    table = {}
    for l in lines[start + 1:]:
        if not l.strip() or _DASHES.match(l):
            continue
        tok = l.split()
        name = tok[-1]
        nums = tok[:-1]
        # strace: [% time, seconds, usecs/call,] calls [errors] syscall
        if len(nums) >= 4:  # strace with time columns
            calls = int(nums[3])
            errors = int(nums[4]) if len(nums) > 4 else 0
        else:
            calls = int(nums[0])
            errors = int(nums[1]) if len(nums) > 1 else 0
        table[name] = (calls, errors)
    return table
