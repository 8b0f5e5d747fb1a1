"""Differential tests with the real programs users run: busybox, coreutils,
dash/bash, python3, gcc, git, sqlite3 and #! scripts. Each runs natively and
under zvisor on each platform, in the same directory with the same
environment, and must print the same and exit the same."""
import os
import shutil
import sys

import pytest

from zvtest import PLATFORMS, compare, native_ok, run, runs_as_root, zv_argv

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def need(*progs):
    for p in progs:
        if not shutil.which(p):
            pytest.skip("%s is not installed (scripts/install-deps.sh installs it)" % p)


@pytest.fixture
def fixed_dir(tmp_path):
    """A directory with fixed names, contents and times."""
    d = tmp_path / "fixed"
    d.mkdir()
    for name, text in [("b.txt", "banana\napple\ncherry\n"), ("a.txt", "zeta\nalpha\n"),
                       ("c.log", "x" * 5000)]:
        (d / name).write_text(text)
    (d / "sub").mkdir()
    (d / "sub" / "inner").write_text("inner\n")
    for p in [d / "b.txt", d / "a.txt", d / "c.log", d / "sub" / "inner", d / "sub", d]:
        os.utime(p, (1000000000, 1000000000))
    return d


def sh(script):
    return ["/bin/sh", "-c", script]


# --- busybox ----------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("script", [
    "echo a b c | busybox tr a-z A-Z | busybox wc -c",
    "for i in 1 2 3; do echo $i; done | busybox sort -r | (read x; echo first $x; busybox cat)",
    "x=$(busybox seq 1 100 | busybox tail -n 3); echo $x; echo $((6 * 7))",
    "busybox ls -1 . sub && busybox sort b.txt && busybox sha256sum a.txt c.log",
    "busybox sh -c 'exit 5'; echo status $?; (cd sub && busybox pwd | busybox sed s,.*/,,)",
    "trap 'echo trapped USR1' USR1; kill -USR1 $$; busybox sleep 0.1 & wait $!; echo waited $?",
], ids=["tr-wc", "subshell", "cmdsubst", "ls-sort-sha", "exit-cd", "trap-wait"])
def test_busybox_sh(fixed_dir, script, platform):
    need("busybox")
    compare(["busybox", "sh", "-c", script], platform, cwd=str(fixed_dir),
            expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_busybox_true(platform):
    need("busybox")
    compare(["busybox", "true"], platform, expect_native=native_ok(0))


# --- coreutils ----------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("argv,code", [
    (["ls", "-la", "--time-style=+%Y-%m-%d", "."], 0),
    (["ls", "-R", "."], 0),
    (["ls", "missing-file"], 2),
    (["cat", "a.txt", "b.txt"], 0),
    (["sort", "b.txt", "a.txt"], 0),
    (["sha256sum", "a.txt", "b.txt", "c.log"], 0),
    (["md5sum", "c.log"], 0),
    (["wc", "a.txt", "b.txt", "c.log"], 0),
    (["env"], 0),
    (["find", ".", "-type", "f"], 0),
    (["stat", "-c", "%n %s %Y %A", "a.txt", "sub"], 0),
    (["date", "-u", "-d", "@0"], 0),
    (["seq", "1", "5"], 0),
    (["head", "-c", "100000", "/dev/zero"], 0),
    (["true"], 0),
    (["false"], 1),
], ids=lambda v: v if isinstance(v, int) else "-".join(v)[:40])
def test_coreutils(fixed_dir, argv, code, platform):
    need(argv[0])
    compare(argv, platform, cwd=str(fixed_dir), expect_native=native_ok(code))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_coreutils_stdin(platform):
    compare(["sort", "-n"], platform, input="10\n9\n100\n1\n", expect_native=native_ok(0))
    compare(["sha256sum"], platform, input="x" * 100000, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_file_operations(tmp_path, platform):
    """Files created, copied, moved and removed under zvisor."""
    def setup():
        shutil.rmtree(tmp_path / "w", ignore_errors=True)
        (tmp_path / "w").mkdir()
    compare(sh("set -e; echo data > f; cp f g; mv g h; mkdir d; ln -s ../h d/link; cat d/link; "
               "chmod 600 f; stat -c '%a %s' f h; rm -r d f; ls; cat h"),
            platform, cwd=str(tmp_path / "w"), setup=setup, expect_native=native_ok(0))


# --- other interpreters and tools ----------------------------------------------

# (program that must be installed, shell script): what users run besides the
# above; each prints something that depends on the program working.
OTHER_PROGRAMS = {
    "perl": ("perl", "perl -e 'print join(\",\", map { $_ * 2 } 1..10), \"\\n\"'"),
    "perl-fork": ("perl", "perl -e 'my $p = fork; if (!$p) { exit 3 } waitpid($p, 0); print $? >> 8, \"\\n\"'"),
    "node": ("node", "node -e 'console.log([1, 2, 3].map(x => x * 2).join())'"),
    "node-child": ("node", "node -e 'const c = require(\"child_process\"); "
                           "console.log(c.execSync(\"echo sub\").toString().trim())'"),
    "node-timers": ("node", "node -e 'setTimeout(() => console.log(\"timer\"), 50); "
                            "Promise.resolve().then(() => console.log(\"micro\"))'"),
    "gzip": ("gzip", "seq 1 20000 | gzip | gzip -d | md5sum"),
    "xz": ("xz", "seq 1 20000 | xz -T2 | xz -d | md5sum"),
    "bzip2": ("bzip2", "seq 1 20000 | bzip2 | bzip2 -d | md5sum"),
    "zstd": ("zstd", "seq 1 20000 | zstd -q -T2 | zstd -dq | md5sum"),
    "awk": ("awk", "awk 'BEGIN { s = 0; for (i = 0; i < 100000; i++) s += i; print s }'"),
    "openssl": ("openssl", "openssl sha256 -r /etc/passwd; openssl rand -hex 8 | wc -c"),
    "xargs": ("xargs", "seq 1 40 | xargs -P4 -n3 echo | wc -l"),
    "dd": ("dd", "dd if=/dev/zero bs=1M count=16 status=none | md5sum"),
    # the process name (/proc/self/comm, the stat line) is the program's
    "comm": ("cut", "cat /proc/self/comm; sh -c 'cat /proc/$$/comm; exec cat /proc/self/comm'; "
                    "cut -d' ' -f2 /proc/self/stat"),
    # /proc/self/exe is a symlink to the program, for lstat and readlink alike
    "proc-exe": ("ls", "ls -l /proc/self/exe | sed 's/.*-> //'; stat -c '%F %N' /proc/self/exe; "
                       "readlink /proc/self/exe; test -L /proc/self/exe && echo link"),
    # another process's exe and maps name its program (sys/procview_peer.c), as
    # pidof, start-stop-daemon and lsof read them; a stopped one's exe too
    "proc-other": ("grep", "sleep 3 & p=$!; sleep 0.3; readlink /proc/$p/exe; stat -L -c %s /proc/$p/exe; "
                           "stat -c %s /usr/bin/sleep; grep -c zvisor /proc/$p/maps; grep -c ' /usr/bin/sleep$' "
                           "/proc/$p/maps; kill -STOP $p; readlink /proc/$p/exe; kill -CONT $p; kill $p"),
    "start-stop-daemon": ("start-stop-daemon",
                          "f=$(mktemp -u); start-stop-daemon --start --background --make-pidfile --pidfile $f "
                          "--exec /usr/bin/sleep -- 30; sleep 0.3; "
                          "start-stop-daemon --status --pidfile $f --exec /usr/bin/sleep; echo status $?; "
                          "start-stop-daemon --stop --pidfile $f --exec /usr/bin/sleep --retry 5; echo stop $?; "
                          "rm -f $f"),
}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", list(OTHER_PROGRAMS))
def test_other_programs(name, platform):
    prog, script = OTHER_PROGRAMS[name]
    need(prog)
    compare(sh(script), platform, expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_knock_without_siginfo(platform):
    """With the user's queue of pending signals full (RLIMIT_SIGPENDING 0
    here), the host delivers a queued SIGSYS without its siginfo: a read of
    another hosted process's maps knocks it so, and the knocked process
    must not die of the guest's SIGSYS but find the knock (peer/peer.c) and
    answer with its own view of its maps, without zvisor's mappings (the
    host's text names zvisor)."""
    script = "sleep 3 & p=$!; sleep 0.2; grep -c zvisor /proc/$p/maps; kill $p; wait $p; echo $?"
    res = run(["prlimit", "--sigpending=0", "--"] + zv_argv(["/bin/sh", "-c", script], platform))
    assert (res.stdout, res.returncode) == ("0\n143\n", 0), res.stdout + res.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_chroot_then_exec(tmp_path, platform):
    """A program that chroots into a tree without /proc can still execve
    there (zvisor keeps its own executable open from before the chroot).
    Without CAP_SYS_CHROOT, chroot fails alike (exit 125, EPERM)."""
    need("busybox")
    busybox = shutil.which("busybox")
    with open(busybox, "rb") as f:
        if b"ld-linux" in f.read(4096):
            pytest.skip("busybox is not static (busybox-static)")
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    shutil.copy(busybox, root / "bin" / "busybox")
    os.symlink("busybox", root / "bin" / "sh")
    script = "echo in chroot; ls /; test -e /proc || echo no proc; sh -c 'echo nested exec'; exec echo exec done"
    compare(["chroot", str(root), "/bin/sh", "-c", script], platform,
            expect_native=native_ok(0 if runs_as_root() else 125))


# --- dash and bash --------------------------------------------------------------

SHELL_SCRIPTS = {
    "pipes": "seq 1 2000 | grep 7 | sort -r | head -n 5; echo ${PIPESTATUS:-done}",
    "subshells": "(echo in subshell; (echo nested; exit 3); echo inner status $?) | cat; "
                 "x=$(echo $(echo deep)); echo $x",
    "loops": "i=0; while [ $i -lt 50 ]; do i=$((i+1)); done; echo $i; "
             "for f in a b c; do printf '%s-' $f; done; echo",
    "redirects": "echo out; echo err >&2; { echo grouped; echo two; } > /dev/null; "
                 "cat <<EOF\nheredoc $((1+1))\nEOF",
    "background": "sleep 0.2 & p=$!; echo started; wait $p; echo status $?; "
                  "(exit 7) & wait $!; echo status $?",
    "trap": "trap 'echo got USR1' USR1; kill -USR1 $$; trap 'echo bye' EXIT; exit 4",
}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", list(SHELL_SCRIPTS))
@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_shell(shell, name, platform):
    need(shell)
    code = 4 if name == "trap" else 0
    compare([shell, "-c", SHELL_SCRIPTS[name]], platform, expect_native=native_ok(code))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shebang_scripts(tmp_path, platform):
    """#! scripts: /bin/sh, `/usr/bin/env bash` (PATH lookup by env), an
    interpreter argument, and a script that runs another script."""
    s1 = tmp_path / "s1.sh"
    s1.write_text("#!/bin/sh\necho \"s1: $# args: $*\"\nexec %s/s2 from-s1\n" % tmp_path)
    s2 = tmp_path / "s2"
    s2.write_text("#!/usr/bin/env bash\necho \"s2: $1 bash=${BASH_VERSION:+yes}\"\n"
                  "exit 6\n")
    s3 = tmp_path / "s3"
    s3.write_text("#!/bin/sed -f\ns/hello/HELLO/\n")
    for s in (s1, s2, s3):
        s.chmod(0o755)
    compare([str(s1), "a", "b c"], platform, expect_native=native_ok(6))
    compare([str(s3)], platform, input="hello world\n", expect_native=native_ok(0))


# --- python3 ---------------------------------------------------------------------

PY_SNIPPETS = {
    "print": "print('hello from python', 6 * 7)",
    "threads": """
import threading, queue
q = queue.Queue()
def work(i):
    q.put((i, sum(range(i * 10000))))
ts = [threading.Thread(target=work, args=(i,)) for i in range(16)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sorted(q.get() for _ in range(16))[:4], threading.active_count())
""",
    "subprocess": """
import subprocess, sys
r = subprocess.run(['echo', 'from', 'echo'], capture_output=True, text=True)
print(repr(r.stdout), r.returncode)
r = subprocess.run(['sh', '-c', 'exit 3'])
print('sh exit', r.returncode)
r = subprocess.run([sys.executable, '-c', 'print(1 + 1)'], capture_output=True, text=True)
print('python child', r.stdout.strip())
""",
    "signal": """
import signal, time, os
hits = []
signal.signal(signal.SIGALRM, lambda s, f: hits.append(s))
signal.setitimer(signal.ITIMER_REAL, 0.05)
time.sleep(0.5)
print('alarm handled', hits == [signal.SIGALRM])
signal.signal(signal.SIGUSR1, lambda s, f: hits.append(s))
os.kill(os.getpid(), signal.SIGUSR1)
print('usr1 handled', hits[-1] == signal.SIGUSR1)
signal.alarm(1)
try:
    signal.signal(signal.SIGALRM, lambda s, f: 1 / 0)
    time.sleep(5)
except ZeroDivisionError:
    print('handler exception interrupted sleep')
""",
    "json": """
import json
d = {'a': [1, 2, {'b': None}], 'c': 'text', 'd': 1.5}
s = json.dumps(d, sort_keys=True)
print(s, json.loads(s) == d)
""",
    "fork": """
import os
pid = os.fork()
if pid == 0:
    print('child'); os._exit(9)
_, st = os.waitpid(pid, 0)
print('parent', os.waitstatus_to_exitcode(st))
""",
    "files": """
import tempfile, os, hashlib
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, 'f')
    with open(p, 'wb') as f:
        f.write(b'x' * 1000000)
    print(hashlib.sha256(open(p, 'rb').read()).hexdigest(), sorted(os.listdir(d)))
""",
    "exception": "import sys; print('before'); sys.stdout.flush(); raise SystemExit(5)",
}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", list(PY_SNIPPETS))
def test_python(name, platform):
    code = 5 if name == "exception" else 0
    compare([PYTHON, "-c", PY_SNIPPETS[name]], platform, expect_native=native_ok(code))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_python3_from_path(platform):
    """`python3` as found in PATH (possibly a wrapper script that execs the
    real interpreter)."""
    need("python3")
    compare(["python3", "-c", "import sys; print(sys.version_info[0])"], platform,
            expect_native=native_ok(0))


# --- gcc --------------------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_gcc_compile_link_run(tmp_path, platform):
    """gcc (driver, cc1, as, collect2, ld: fork/exec and pipes) compiles and
    links a C file; the program runs; the binary is the same as natively."""
    need("gcc")
    src = tmp_path / "prog.c"
    src.write_text('#include <stdio.h>\n#include <math.h>\n'
                   'int main(int c, char **v) { printf("compiled %d %.3f\\n", c, sqrt(2.0));'
                   ' return 2; }\n')

    def setup():
        for f in ("prog", "prog.o"):
            if (tmp_path / f).exists():
                (tmp_path / f).unlink()
    compare(sh("gcc -O2 -c prog.c -o prog.o && gcc -o prog prog.o -lm && ./prog x; "
               "echo status $?; sha256sum prog"),
            platform, cwd=str(tmp_path), setup=setup, expect_native=native_ok(0))


# --- git ---------------------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Zvisor Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Zvisor Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_AUTHOR_DATE": "2001-09-09T01:46:40Z", "GIT_COMMITTER_DATE": "2001-09-09T01:46:40Z",
    "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC", "LC_ALL": "C",
}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_git(tmp_path, platform):
    need("git")
    repo = tmp_path / "repo"
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), **GIT_ENV)

    def setup():
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir()
        (repo / "README").write_text("hello git\n")
        (repo / "src").mkdir()
        (repo / "src" / "a.c").write_text("int a;\n")
    compare(sh("set -e; git init -q -b main . ; git add -A; git commit -q -m 'first commit'; "
               "echo more >> README; git commit -q -am second; git log --format='%H %s'; "
               "git status --short; git cat-file -p HEAD; git gc -q; git count-objects -v | "
               "grep -v size; git show --stat HEAD~1 | tail -n 3"),
            platform, cwd=str(repo), env=env, setup=setup, expect_native=native_ok(0))


# --- sqlite3 ------------------------------------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_sqlite3(tmp_path, platform):
    need("sqlite3")
    db = tmp_path / "t.db"

    def setup():
        for f in tmp_path.glob("t.db*"):
            f.unlink()
    script = ("create table t(id integer primary key, name text, n real);\n"
              "insert into t(name, n) values ('one', 1.5), ('two', 2.25), ('three', 3);\n"
              "with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000)\n"
              "  insert into t(name, n) select 'gen' || x, x * 0.5 from c;\n"
              "select count(*), sum(n) from t;\n"
              "select name from t where id <= 3 order by name;\n"
              "create index i on t(name);\n"
              "pragma integrity_check;\n")
    compare(["sqlite3", str(db)], platform, input=script, setup=setup,
            expect_native=native_ok(0))
    compare(["sqlite3", str(db), "select count(*) from t where name like 'gen%'"], platform,
            expect_native=native_ok(0))
