"""Batch workloads for workloads.py: a program runs to completion under the
runner, timed from the runner's start to its exit; its output is checked.

Each workload prepares what it needs once, outside the timed part, in a
directory of its own under the private /tmp/zvbench-* directory.  Each run
has a fresh directory RUN with RUN/work as the program's working directory
and RUN/trace.out as the trace runners' output file.
"""

import os
import shutil

from common import ROOT, ensure_tool, run_cmd, status_text, why_line, work_env

BATCH_TIMEOUT = 180.0       # a run that takes longer is killed and not run again

# The real interpreter, not a pyenv or virtualenv shim script.
PYTHON = os.path.realpath("/usr/bin/python3") if os.path.exists("/usr/bin/python3") \
    else os.path.realpath(shutil.which("python3") or "python3")
GOIO = os.path.join(ROOT, "build", "bench", "goio")

# git must not read the user's or the system's configuration.
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
OLD = 1_600_000_000     # mtime given to generated files: no "racily clean" git entries


def go_binary():
    for go in (shutil.which("go"), "/usr/local/go/bin/go"):
        if go and os.access(go, os.X_OK):
            return go
    return None


def fmt_seconds(s):
    return f"{s:.3g} s" if s >= 1 else f"{s * 1000:.0f} ms"


def make_tree(top, ndirs, per_dir):
    """ndirs directories of per_dir small files each, all dated OLD."""
    for d in range(ndirs):
        sub = os.path.join(top, f"d{d:02d}")
        os.makedirs(sub, exist_ok=True)
        for i in range(per_dir):
            path = os.path.join(sub, f"f{i:03d}.txt")
            with open(path, "w") as f:
                f.write(f"directory {d} file {i}\n" * (1 + i % 8))
            os.utime(path, (OLD, OLD))


def shell(cmd, cwd, timeout=300):
    """Run a preparation step natively; return its stdout or raise."""
    rc, out, err, _ = run_cmd(cmd, timeout, cwd=cwd, env=dict(work_env(), **GIT_ENV))
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {status_text(rc)}: {why_line(err)}")
    return out


class Workload:
    key = label = description = ""
    unit = "s"
    higher_is_better = False
    syscall_heavy = False
    tools = []              # [(command, Debian package)]
    reason = ""

    def __init__(self, args):
        self.args = args
        self.shared = None

    def prepare(self, args):
        """Install what is missing and prepare; None when ready, else why not."""
        for cmd, pkg in self.tools:
            why = ensure_tool(cmd, pkg, not args.no_install)
            if why:
                return why
        self.shared = os.path.join(work_env()["TMPDIR"], f"shared-{self.key}")
        os.makedirs(self.shared, exist_ok=True)
        try:
            return self.setup()
        except (OSError, RuntimeError) as e:
            return f"preparation failed: {e}"

    def setup(self):
        return None

    def skip_reason(self, runner):
        return None

    def has_native(self, med):
        return bool(med[self.key].get("native"))

    def fmt_value(self, v):
        return fmt_seconds(v)


def trace_problem(runner, trace):
    """A trace runner must have written its file (-c: a summary table)."""
    if not runner.writes_trace:
        return None
    try:
        with open(trace, errors="replace") as f:
            text = f.read()
    except OSError as e:
        return f"no trace file: {e}"
    if not text.strip():
        return "empty trace file"
    if "-c" in runner.argv([], trace) and "total" not in text:
        return "no summary table in the -c output"
    return None


class Batch(Workload):
    def setup_run(self, work):
        """Untimed, natively, before each run."""

    def command(self, work, runner):
        raise NotImplementedError

    def expected(self):
        raise NotImplementedError

    def check(self, work, out, runner):
        got = out.strip()
        want = self.expected()
        return None if got == want else f"wrong output: {got[-120:]!r}, expected {want!r}"

    def measure(self, runner, run_dir, args):
        work, trace = os.path.join(run_dir, "work"), os.path.join(run_dir, "trace.out")
        self.setup_run(work)
        rc, out, err, secs = run_cmd(runner.argv(self.command(work, runner), trace),
                                     BATCH_TIMEOUT, cwd=work, env=dict(work_env(), **GIT_ENV))
        if rc is None:
            return None, f"timed out after {BATCH_TIMEOUT:.0f} s", None
        if rc != 0:
            return None, f"{status_text(rc)}: {why_line(err) or why_line(out) or 'no output'}", None
        why = self.check(work, out, runner) or trace_problem(runner, trace)
        if why:
            return None, why, None
        size = os.path.getsize(trace) if os.path.exists(trace) else None
        return secs, None, {"trace_bytes": size} if size is not None else {}


class PythonStartup(Batch):
    key, label = "py-startup", "python3 start-up"
    description = (f"`{PYTHON} -c 'import json, email, http.client, asyncio; "
                   "print(\"imported\")'`")

    def command(self, work, runner):
        return [PYTHON, "-c", "import json, email, http.client, asyncio; print('imported')"]

    def expected(self):
        return "imported"


FILES_SCRIPT = '''\
import os
N = 2000
def content(i):
    return f"{i:05d} " * (i % 64 + 1) + "\\n"
os.mkdir("files")
for i in range(N):
    with open(f"files/f{i:04d}.txt", "w") as f:
        f.write(content(i))
good = size = 0
for i in range(N):
    with open(f"files/f{i:04d}.txt") as f:
        data = f.read()
    good += data == content(i)
    size += len(data)
print(f"files={N} good={good} bytes={size}")
'''


class PythonFiles(Batch):
    key, label = "py-files", "python3 2,000 files"
    description = ("a python3 script writes 2,000 files (6-385 bytes) in a new directory, "
                   "reads them back and counts those whose content is right")
    syscall_heavy = True

    def setup(self):
        self.script = os.path.join(self.shared, "files.py")
        with open(self.script, "w") as f:
            f.write(FILES_SCRIPT)

    def command(self, work, runner):
        return [PYTHON, self.script]

    def expected(self):
        size = sum(6 * (i % 64 + 1) + 1 for i in range(2000))
        return f"files=2000 good=2000 bytes={size}"


class Sqlite(Batch):
    key, label = "sqlite", "sqlite3 20,000 inserts"
    description = ("`sqlite3 test.db '.read ops.sql'`: a file database, 200 transactions of "
                   "100 INSERTs, then `SELECT count(*), sum(k), count(DISTINCT v)`")
    tools = [("sqlite3", "sqlite3")]

    def setup(self):
        self.sql = os.path.join(self.shared, "ops.sql")
        lines = ["CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT NOT NULL);"]
        for t in range(200):
            lines.append("BEGIN;")
            lines += [f"INSERT INTO t(k, v) VALUES ({i * 7 % 1009}, 'value-{i}');"
                      for i in range(t * 100, t * 100 + 100)]
            lines.append("COMMIT;")
        lines.append("SELECT count(*), sum(k), count(DISTINCT v) FROM t;")
        with open(self.sql, "w") as f:
            f.write("\n".join(lines) + "\n")

    def command(self, work, runner):
        return ["sqlite3", "test.db", f".read {self.sql}"]

    def expected(self):
        return f"20000|{sum(i * 7 % 1009 for i in range(20000))}|20000"


# gen.c: NFUNC functions of 10 lines, main with one line per call: 2,000 lines.
NFUNC = 181


def c_function(i):
    return [f"static long f{i}(long x)", "{", f"    long a = x + {i};",
            f"    a = (a * {31 + i % 17} + {i % 101}) % 1000003;",
            f"    if (a % 3 == {i % 3})", f"        a += {i % 7 + 1};", "    else",
            f"        a ^= {i % 255};", "    return a;", "}"]


def c_function_value(i, x):
    """What f{i}(x) returns (x >= 0), for the expected output."""
    a = (x + i) * (31 + i % 17) + i % 101
    a %= 1000003
    return a + i % 7 + 1 if a % 3 == i % 3 else a ^ (i % 255)


class Gcc(Batch):
    key, label = "gcc", "gcc 2,000-line file"
    description = ("`gcc -O1 -o prog gen.c` on a generated 2,000-line C file; the program "
                   "is then run natively and its output checked (under gVisor, whose files "
                   "stay in the sandbox, it runs inside the same `runsc do`)")
    tools = [("gcc", "gcc")]

    def setup(self):
        self.source = os.path.join(self.shared, "gen.c")
        lines = ["/* generated by bench/wl_batch.py */", "#include <stdio.h>", ""]
        for i in range(NFUNC):
            lines += c_function(i)
        lines += ["int main(void)", "{", "    long s = 1;"]
        lines += [f"    s = (s + f{i}(s % 1000)) % 1000000007;" for i in range(NFUNC)]
        lines += ['    printf("%ld\\n", s);', "    return 0;", "}"]
        assert len(lines) == 2000, len(lines)
        with open(self.source, "w") as f:
            f.write("\n".join(lines) + "\n")

    def command(self, work, runner):
        if runner.host_writes:
            return ["gcc", "-O1", "-o", "prog", self.source]
        return ["sh", "-c", f"gcc -O1 -o prog {self.source} && ./prog"]

    def expected(self):
        s = 1
        for i in range(NFUNC):
            s = (s + c_function_value(i, s % 1000)) % 1000000007
        return str(s)

    def check(self, work, out, runner):
        if runner.host_writes:
            rc, out, err, _ = run_cmd([os.path.join(work, "prog")], 30, cwd=work)
            if rc != 0:
                return f"the compiled program: {status_text(rc)}: {why_line(err)}"
        return super().check(work, out, runner)


class Git(Batch):
    tools = [("git", "git")]
    syscall_heavy = True


class GitCommit(Git):
    key, label = "git-commit", "git commit 2,000 files + 10 status"
    description = ("`git init`, `git add -A`, `git commit` of 2,000 small files in 20 "
                   "directories (created untimed), then `git status --porcelain` ten "
                   "times (must print nothing) and `git ls-files | wc -l` (must be 2000)")

    def setup_run(self, work):
        make_tree(work, 20, 100)

    def command(self, work, runner):
        return ["sh", "-c", "git init -q && git add -A && git commit -q -m bench && "
                "for i in 1 2 3 4 5 6 7 8 9 10; do git status --porcelain; done && "
                "git ls-files | wc -l"]

    def expected(self):
        return "2000"


class GitStatus(Git):
    key, label = "git-status", "git status 5,000 files"
    description = ("`git -C REPO status --porcelain --branch` on a 5,000-file repository "
                   "committed once before the timed runs (must print only `## bench`)")

    def setup(self):
        self.repo = os.path.join(self.shared, "repo")
        make_tree(self.repo, 50, 100)
        shell(["git", "init", "-q", "-b", "bench"], self.repo)
        shell(["git", "add", "-A"], self.repo)
        shell(["git", "commit", "-q", "-m", "bench"], self.repo)
        shell(["git", "status", "--porcelain"], self.repo)    # settles the index

    def command(self, work, runner):
        return ["git", "-C", self.repo, "status", "--porcelain", "--branch"]

    def expected(self):
        return "## bench"


class NativeReference(Batch):
    """A shell pipeline whose output natively is the reference."""
    pipeline = ""

    def setup(self):
        self.reference = shell(["sh", "-c", self.pipeline], self.shared).strip()
        if not self.reference:
            return f"`{self.pipeline}` prints nothing natively"

    def command(self, work, runner):
        return ["sh", "-c", self.pipeline]

    def expected(self):
        return self.reference


class Find(NativeReference):
    key, label = "find", "find /usr -name '*.h'"
    pipeline = "find /usr -name '*.h' | wc -l"
    description = f"`sh -c \"{pipeline}\"`, compared with the native count"
    syscall_heavy = True


class Tar(NativeReference):
    key, label = "tar", "tar c /usr/include"
    pipeline = "tar c /usr/include 2>/dev/null | wc -c"
    description = f"`sh -c \"{pipeline}\"`, compared with the native byte count"
    syscall_heavy = True


class GoIO(NativeReference):
    key, label = "go-io", "Go goroutine file+pipe I/O"
    description = ("bench/goio: 64 goroutines write, read back and check 50 files of 8 KiB "
                   "each; 16 goroutine pairs push 16 MiB each through a pipe in 4 KiB "
                   "writes; output compared with the native run's")

    def setup(self):
        go = go_binary()
        if not go:
            return "no Go toolchain (scripts/install-deps.sh installs /usr/local/go)"
        os.makedirs(os.path.dirname(GOIO), exist_ok=True)
        shell([go, "build", "-o", GOIO, "main.go"], os.path.join(ROOT, "bench", "goio"))
        self.pipeline = f"{GOIO} ."
        return super().setup()

    def command(self, work, runner):
        return [GOIO, "."]


NMAKE = 50      # files of the make workload's project


class MakeProject(Batch):
    key, label = "make-j2", "make -j2, 50 C files"
    description = (f"`make -j2` of a generated project of {NMAKE} small C files and a main "
                   "(copied untimed into the run's directory), then `./prog`, whose sum "
                   "is checked: a build system's fork, exec and short compiler runs")
    tools = [("gcc", "gcc"), ("make", "make")]

    def setup(self):
        self.src = os.path.join(self.shared, "src")
        os.makedirs(self.src, exist_ok=True)
        for i in range(NMAKE):
            with open(os.path.join(self.src, f"m{i:02d}.c"), "w") as f:
                f.write("\n".join(c_function(i)).replace("static ", "", 1) + "\n")
        with open(os.path.join(self.src, "main.c"), "w") as f:
            f.write("#include <stdio.h>\n")
            f.write("".join(f"long f{i}(long x);\n" for i in range(NMAKE)))
            f.write("int main(void)\n{\n    long s = 1;\n")
            f.write("".join(f"    s = (s + f{i}(s % 1000)) % 1000000007;\n" for i in range(NMAKE)))
            f.write('    printf("%ld\\n", s);\n    return 0;\n}\n')
        objs = " ".join(f"m{i:02d}.o" for i in range(NMAKE))
        with open(os.path.join(self.src, "Makefile"), "w") as f:
            f.write(f"prog: main.o {objs}\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -O1 -c -o $@ $<\n")

    def setup_run(self, work):
        shutil.copytree(self.src, work, dirs_exist_ok=True)

    def command(self, work, runner):
        return ["sh", "-c", "make -s -j2 && ./prog"]

    def expected(self):
        s = 1
        for i in range(NMAKE):
            s = (s + c_function_value(i, s % 1000)) % 1000000007
        return str(s)


class ShellLoop(Batch):
    key, label = "sh-loop", "sh loop of 200 execs"
    pipeline = "for i in $(seq 200); do /bin/true; done; echo done"
    description = f"`sh -c '{pipeline}'`: fork and exec, nothing else"

    def command(self, work, runner):
        return ["sh", "-c", self.pipeline]

    def expected(self):
        return "done"


def workloads(args):
    return [cls(args) for cls in (PythonStartup, PythonFiles, Sqlite, Gcc, MakeProject,
                                  ShellLoop, GitCommit, GitStatus, Find, Tar, GoIO)]
