#!/usr/bin/env python3
"""strace parity of `zvisor trace`, for the tests and by hand.

Runs a command under `strace -f -o` and `zvisor trace -f -o`, normalises
both (pids, addresses, times, random bytes, strace's <unfinished>/<resumed>
splits) and reports the lines that differ, grouped by call name:

    tests/trace_parity.py [-v] [--all] -- CMD ARGS...   # one command
    tests/trace_parity.py --corpus [-v]                 # every known program

Lines of the calls in DIFFERENT are left out of the comparison unless --all
is given; each entry says why those lines cannot match."""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zvtest import GUEST_DIR, ZVISOR, Result, run  # noqa: E402

# --- normalisation -----------------------------------------------------------

_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>")


def lines_by_pid(text):
    """{pid: [line, ...]} from `-f -o` output, with strace's unfinished /
    resumed pairs joined into one line."""
    out, pending = {}, {}
    for line in text.splitlines():
        m = re.match(r"^(\d+) +(.*)$", line)
        if not m:
            continue
        pid, rest = m.group(1), m.group(2)
        if rest.endswith(" <unfinished ...>"):
            pending[pid] = rest[: -len(" <unfinished ...>")]
            continue
        r = _RESUMED.match(rest)
        if r and pid in pending:
            rest = pending.pop(pid) + rest[r.end():]
        out.setdefault(pid, []).append(rest)
    return out


_PIDS = r"(set_tid_address|getpid|gettid|getppid|getpgrp|getpgid|getsid|setsid|vfork|fork|clone|clone3|wait4|waitid)"


def normalise(line):
    line = re.sub(r"(?<![A-Za-z0-9])0x[0-9a-f]+", "ADDR", line)  # (not inside a random file name)
    line = re.sub(r'getrandom\("(\\x[0-9a-f]{2})+"', 'getrandom("RANDOM"', line)
    line = re.sub(r"\s+= ", " = ", line)
    line = re.sub(_PIDS + r"\((.*)\) = \d+", r"\1(\2) = PID", line)
    line = re.sub(r"(si_pid|child_tid|parent_tid)=\d+", r"\1=PID", line)
    line = re.sub(r"(child_tid|parent_tid|pidfd)=\[\d+\]", r"\1=[PID]", line)
    line = re.sub(r"tv_sec=\d+, tv_nsec=\d+", "tv_sec=S, tv_nsec=NS", line)
    line = re.sub(r"tv_sec=\d+, tv_usec=\d+", "tv_sec=S, tv_usec=US", line)
    line = re.sub(r"(stx_[amcb]time)=\{tv_sec=-?\d+, tv_nsec=\d+\}", r"\1=T", line)
    line = re.sub(r"(st_[amc]time)=\d+", r"\1=T", line)
    line = re.sub(r"^(waitid\(P_PID|waitid\(P_PIDFD), \d+", r"\1, PID", line)
    line = re.sub(r"^(wait4|kill|tgkill|tkill|waitid|getpgid|setpgid|getsid|sched_\w+|prlimit64|"
                  r"pidfd_open|process_vm_readv|rt_sigqueueinfo)\(\d+", r"\1(PID", line)
    line = re.sub(r"^(tgkill)\(PID, \d+", r"\1(PID, PID", line)
    line = re.sub(r"si_utime=\d+( /\* [\d.]+ s \*/)?, si_stime=\d+( /\* [\d.]+ s \*/)?", "si_utime=T, si_stime=T", line)
    line = re.sub(r"(uptime|freeram|sharedram|bufferram|freeswap|procs|freehigh)=\d+", r"\1=N", line)
    line = re.sub(r"^(rt_sigreturn\(.*\)) = \d+$", r"\1 = N", line)  # often a pid
    line = re.sub(r"^(times\(.*\)) = \d+$", r"\1 = T", line)  # clock ticks since boot
    # the CPU time used so far: a tick more or less under load
    line = re.sub(r"(tms_c?[us]time)=\d+( /\* [\d.]+ s \*/)?", r"\1=T", line)
    line = re.sub(r"(TIOCGPGRP|TIOCSPGRP|TIOCGSID), \[\d+\]", r"\1, [PID]", line)
    line = re.sub(r"loads=\[\d+, \d+, \d+\]", "loads=[L]", line)
    line = re.sub(r"\d+( /\* |\()\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000", r"T\1DATE", line)
    line = re.sub(r"/\* \d{4}-\d\d-\d\dT[\d:.]+\+0000 \*/", "/* DATE */", line)
    return line


_URANDOM = re.compile(r'^open(at)?\(.*"/dev/u?random", .*\) = (\d+)$')


def calls(text):
    """The normalised lines of all processes, in order within each; the
    bytes read from /dev/urandom are replaced by RANDOM."""
    procs = []
    for ls in lines_by_pid(text).values():
        random_fds, res = set(), []
        for l in ls:
            m = _URANDOM.match(l)
            if m:
                random_fds.add(m.group(2))
            r = re.match(r'^read\((\d+), ".*"(\.\.\.)?, ', l)
            if r and r.group(1) in random_fds:
                l = "read(%s, RANDOM, %s" % (r.group(1), l[r.end():])
            res.append(normalise(l))
        procs.append(res)
    # processes in the order of their lines, not of their pids (which may
    # wrap) or of their first line's time (which depends on scheduling)
    return [l for res in sorted(procs) for l in res]


def name_of(line):
    if line.startswith(("---", "+++")):
        return line.split()[0] + " " + line.split()[1]
    return line.split("(")[0]


# Calls whose lines cannot match, with the reason.
DIFFERENT = {
    "--- SIGCHLD": "zvisor does not see a SIGCHLD the program neither catches nor dies from, and how many "
                   "of a program's children's exits coalesce into one signal depends on timing",
}


def comparable(lines, everything=False):
    return [l for l in lines if everything or name_of(l) not in DIFFERENT]


def drop_unseen_signals(want, got):
    """Signals zvisor cannot see (SIGCHLD with its default disposition) are
    not compared."""
    if any(x.startswith("--- SIGCHLD") for x in got):
        return want
    return [l for l in want if not l.startswith("--- SIGCHLD")]


def differences(want, got):
    """[(strace line or None, zvisor line or None)] for the lines that do not
    match, aligned so that a changed line is paired with its counterpart."""
    out = []
    head = 0
    while head < min(len(want), len(got)) and want[head] == got[head]:
        head += 1
    tail = 0
    while tail < min(len(want), len(got)) - head and want[-1 - tail] == got[-1 - tail]:
        tail += 1
    want, got = want[head:len(want) - tail], got[head:len(got) - tail]
    if len(want) + len(got) > 20000:
        # too slow for difflib: compare as multisets, pairing lines of one name
        extra_w, extra_g = Counter(want) - Counter(got), Counter(got) - Counter(want)
        a = sorted(extra_w.elements(), key=name_of)
        b = sorted(extra_g.elements(), key=name_of)
        return out + [(a[k] if k < len(a) else None, b[k] if k < len(b) else None)
                      for k in range(max(len(a), len(b)))]
    else:
        ops = difflib.SequenceMatcher(None, want, got, autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in ops:
        if op == "equal":
            continue
        a, b = want[i1:i2], got[j1:j2]
        for k in range(max(len(a), len(b))):
            out.append((a[k] if k < len(a) else None, b[k] if k < len(b) else None))
    return out


# --- running -----------------------------------------------------------------

class Parity:
    def __init__(self, want, got, rs, rz):
        self.want, self.got, self.rs, self.rz = want, got, rs, rz
        self.diffs = differences(want, got)

    def by_name(self):
        c = Counter()
        for a, b in self.diffs:
            c[name_of(a if a is not None else b)] += 1
        return c

    def summary(self):
        return "%d lines compared, %d differ" % (len(self.want), len(self.diffs))


def run_on_pty(argv, cwd=None, env=None, timeout=120):
    """Runs argv with a new pseudo-terminal as stdin, stdout and stderr (no
    controlling terminal); returns a zvtest.Result with the output."""
    master, slave = os.openpty()
    proc = subprocess.Popen([str(a) for a in argv], stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                            env=env, start_new_session=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer is gone
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    rc = proc.wait(timeout=timeout)
    return Result(out.decode("utf-8", "surrogateescape"), "", rc)


def collapse(lines):
    """Runs of one repeated line as one (a guest that spins on a call)."""
    return [l for i, l in enumerate(lines) if i == 0 or lines[i - 1] != l]


def compare(argv, cwd=None, env=None, everything=False, timeout=120, subs=(), ordered=True, skip=(),
            tty=False, spins=False):
    """Runs argv under strace and zvisor trace (each in a fresh copy of cwd
    made by the caller if the program writes files) and returns a Parity."""
    with tempfile.TemporaryDirectory() as tmp:
        s, z = os.path.join(tmp, "s.txt"), os.path.join(tmp, "z.txt")
        runner = run_on_pty if tty else run
        rs = runner(["strace", "-f", "-o", s, "--"] + list(argv), cwd=cwd, env=env, timeout=timeout)
        if callable(getattr(cwd, "reset", None)):
            cwd.reset()
        rz = runner([str(ZVISOR), "trace", "-f", "-o", z, "--"] + list(argv), cwd=cwd, env=env,
                    timeout=timeout)
        want = comparable(calls(Path(s).read_text(errors="surrogateescape")), everything)
        got = comparable(calls(Path(z).read_text(errors="surrogateescape")), everything)
    want = [l for l in want if name_of(l) not in skip]
    got = [l for l in got if name_of(l) not in skip]
    for pat, rep in subs:
        want = [re.sub(pat, rep, l) for l in want]
        got = [re.sub(pat, rep, l) for l in got]
    if spins:
        want, got = collapse(want), collapse(got)
    want = drop_unseen_signals(want, got)
    if not ordered:
        interrupted = re.compile(r" = \? ERESTART")
        want = sorted(l for l in want if not interrupted.search(l))
        got = sorted(l for l in got if not interrupted.search(l))
    return Parity(want, got, rs, rz)


# --- the corpus ----------------------------------------------------------------

PY = "/usr/bin/python3"
PY_SCRIPT = r"""
import json, subprocess, threading
def work(i):
    json.dumps({"i": i, "l": list(range(i))})
ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
print(subprocess.run(["true"]).returncode, json.loads('{"a": [1, 2]}'))
"""
C_FILE = "int main(void) { return 0; }\n"
GIT_SCRIPT = ("git init -q . && git config user.email a@b && git config user.name a && "
              "echo hi > f && touch -d @946684800 f && git add f && git commit -qm m && git status --short && "
              "git log --oneline | wc -l")  # an old mtime: the index is never "racily clean" (timing)
TAR_SCRIPT = "mkdir -p d && echo x > d/a && tar cf t.tar d && tar tf t.tar && rm -r d t.tar"
COREUTILS_SCRIPT = ("echo hello > a && cp a b && mv b c && stat c > /dev/null && ls -la > /dev/null && "
                    "date -u -d @0 && printf '3\\n1\\n2\\n' | sort | wc -l && rm a c")

# guests: name -> argv (the program in tests/guests/build)
GUEST_CASES = {
    "hello": ["hello"], "hello.static": ["hello.static"], "hello.musl": ["hello.musl"],
    "syscalls": ["syscalls"], "syscalls.static": ["syscalls.static"], "flags": ["flags"],
    "threads": ["threads"], "vfork": ["vfork"], "clone3": ["clone3"], "execve": ["execve"],
    "timers": ["timers"], "vdso": ["vdso"], "rawsys": ["rawsys"], "asmhello": ["asmhello"],
    "goguest": ["goguest", "files"], "fds": ["fds"], "tracecalls": ["tracecalls"],
    "tracecalls.static": ["tracecalls.static"], "tracecalls-tty": ["tracecalls"],
}
# real programs: name -> (argv, programs it needs, needs a scratch directory)
REAL_CASES = {
    "busybox-sh": (["busybox", "sh", "-c", "echo a b | busybox tr a-z A-Z | busybox wc -c; busybox ls / > /dev/null"],
                   ["busybox"], False),
    "ls-la": (["ls", "-la", "/etc"], ["ls"], False),
    "sh-ls": (["sh", "-c", "ls /etc/hostname /nonexistent > /dev/null 2>&1; exit 0"], ["sh"], False),
    "cat": (["cat", "/etc/hostname"], ["cat"], False),
    "coreutils": (["sh", "-c", COREUTILS_SCRIPT], ["sh"], True),
    "tar": (["sh", "-c", TAR_SCRIPT], ["tar"], True),
    "python3-pass": ([PY, "-c", "pass"], [PY], False),
    "python3-script": ([PY, "-c", PY_SCRIPT], [PY], False),
    "git": (["sh", "-c", GIT_SCRIPT], ["git"], True),
    "gcc": (["sh", "-c", "printf '%s' '" + C_FILE + "' > t.c && gcc -o t t.c && ./t"], ["gcc"], True),
    "ls-tty": (["ls", "--color=auto", "-C", "/etc/hostname", "/etc/passwd"], ["ls"], False),
    "python3-tty": ([PY, "-c", "import sys; print(sys.stdout.isatty())"], [PY], False),
    # a thread blocked in a sleep when SIGTERM ends the process: its unfinished call and +++ killed
    "python3-killed": ([PY, "-c", "import os, signal, threading, time\n"
                        "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
                        "time.sleep(0.1)\nos.kill(os.getpid(), signal.SIGTERM)"], [PY], False),
    "sqlite3": (["sqlite3", ":memory:", "create table t(a); insert into t values(1); select * from t;"],
                ["sqlite3"], False),
}

# Cases whose lines cannot match line for line, and why (the parity test
# leaves them out; `trace_parity.py --case NAME` still shows them).
UNCOMPARABLE = {
    "threads": "which thread runs each step of its pipe ping-pong, and so which tid's lines hold "
               "which reads and writes, depends on timing (its getppid spins are collapsed)",
    "execve": "an execve from one thread ends the others: strace shows their unfinished calls (= ?) and "
              "+++ exited lines, zvisor does not; it reads /proc/self/auxv and /proc/self/status",
    "fds": "takes every fd number up to RLIMIT_NOFILE: the trace file's fd has no room left and the "
           "rest of the trace goes to stderr; /proc/self/fd's size counts zvisor's hidden fds",
    "rawsys": "reads /proc/self/maps (its addresses, the layout zvisor chose); numbers past 511 are not traced",
    "vdso": "reads /proc/self/maps: its addresses (the layout zvisor chose) differ",
    "timers": "zvisor's timers deliver SIGALRM with its own si_ptr",
    "goguest": "how many threads the Go runtime starts, its preemption signals (SIGURG), sleeps and "
               "futexes depend on timing (compared unordered, 5-100 of ~380 lines differ)",
}

# Calls left out in one case only, and why.
_SIGCHLD_HANDLED = {"rt_sigreturn": "one per SIGCHLD the shell handles: children's exits coalesce "
                                    "into fewer signals depending on timing"}
_SPAWN_MALLOC = {"getrandom": "malloc seeds itself at a process's first allocation: in a posix_spawn child "
                              "that shares memory, whether it is first depends on timing",
                 "brk": "the same: which of the two processes sharing memory grows the heap depends on timing"}
CASE_SKIP = {
    "coreutils": _SIGCHLD_HANDLED, "tar": _SIGCHLD_HANDLED,
    "git": {**_SIGCHLD_HANDLED, **_SPAWN_MALLOC}, "gcc": {**_SIGCHLD_HANDLED, **_SPAWN_MALLOC},
    "sh-ls": _SIGCHLD_HANDLED,
    "busybox-sh": _SIGCHLD_HANDLED,
    "python3-killed": {"munmap": "malloc's thread arena, as in python3-script", "mmap": "the same",
                       "mprotect": "the same", "futex": "the thread start-up handshake depends on timing"},
    "python3-script": {"munmap": "malloc's thread arenas: whether a thread needs one of its own, and how it "
                                 "trims the 64 MiB-aligned mapping, depend on timing",
                       "mmap": "the same arenas", "mprotect": "the same arenas",
                       "futex": "whether a thread has to wait on a lock depends on timing"},
}

# Guests that spin on a call while waiting for another thread or process:
# runs of one repeated line count as one.
SPINS = {"execve", "threads"}

# Cases run on a pseudo-terminal (the terminal ioctls succeed there).
TTY_CASES = {"tracecalls-tty", "ls-tty", "python3-tty"}

# Cases whose threads or asynchronous signals (SIGCHLD) make the order of
# lines vary between runs: their lines are compared as multisets.
# A call a signal interrupted ("= ? ERESTARTSYS") is left out there too:
# whether the signal came during the call depends on timing.
UNORDERED = {"busybox-sh", "sh-ls", "coreutils", "tar", "python3-script", "python3-killed", "git", "gcc",
             "goguest"}

# Per-case substitutions for content that differs between any two runs.
CASE_SUBS = {
    # mkstemp names
    "gcc": [(r"/tmp/cc[A-Za-z0-9]{6}", "/tmp/ccXXXXXX")],
    # temporary names, and file data holding times and random bytes (index, objects)
    "git": [(r"tmp_obj_[A-Za-z0-9]{6}", "tmp_obj_XXXXXX"), (r"/\.git/t[A-Za-z0-9]{6}", "/.git/tXXXXXX"),
            (r'^(read|write|pread64)\((\d+), ".*"(\.\.\.)?, ', r"\1(\2, DATA, ")],
    # the temporary directory's name; epoll data holds the runtime's pointers
    "goguest": [(r"zvgo\d+", "zvgoN"), (r"data=\{u32=\d+, u64=\d+\}", "data=D")],
    "execve": [(r"zvexec[A-Za-z0-9]{6}", "zvexecXXXXXX")],
    # each run gets a new pseudo-terminal: its minor number differs
    **{name: [(r"makedev\(0x88, (0|0x[0-9a-f]+)\)", "makedev(0x88, PTS)")]
       for name in ("tracecalls-tty", "ls-tty", "python3-tty")},
    # free blocks change between the runs
    "tar": [(r"f_bfree=\d+, f_bavail=\d+, f_files=\d+, f_ffree=\d+", "f_bfree=N, f_bavail=N, f_files=N, f_ffree=N")],
}

class Scratch:
    """A directory a case may write in, emptied between the two runs so
    that both see the same files."""
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="zvparity.")

    def reset(self):
        shutil.rmtree(self.path)
        os.mkdir(self.path, 0o700)  # as mkdtemp made it

    def __fspath__(self):
        return self.path

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


def case_argv(name):
    """(argv, needs scratch) for a corpus case, or None when the program is missing."""
    if name in GUEST_CASES:
        argv = list(GUEST_CASES[name])
        argv[0] = str(GUEST_DIR / argv[0])
        return (argv, False) if os.path.exists(argv[0]) else None
    argv, needs, scratch = REAL_CASES[name]
    for p in needs:
        if not (os.path.exists(p) if os.sep in p else shutil.which(p)):
            return None
    return argv, scratch


def run_case(name, everything=False):
    ca = case_argv(name)
    if ca is None:
        return None
    argv, scratch = ca
    env = dict(os.environ, LC_ALL="C", TZ="UTC", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent-home",
               GIT_AUTHOR_DATE="2020-01-01T00:00:00Z", GIT_COMMITTER_DATE="2020-01-01T00:00:00Z")
    kw = dict(env=env, everything=everything, subs=CASE_SUBS.get(name, ()), ordered=name not in UNORDERED,
              tty=name in TTY_CASES, spins=name in SPINS,
              skip=() if everything else CASE_SKIP.get(name, {}))
    if not scratch:
        return compare(argv, **kw)
    d = Scratch()
    try:
        return compare(argv, cwd=d, **kw)
    finally:
        d.close()


def report(p, verbose, out=sys.stdout):
    print(p.summary(), file=out)
    if (p.rs.stdout, p.rs.returncode) != (p.rz.stdout, p.rz.returncode):
        print("  output differs: strace rc=%d zvisor rc=%d" % (p.rs.returncode, p.rz.returncode), file=out)
    for n, k in p.by_name().most_common():
        print("  %5d %s" % (k, n), file=out)
        if verbose:
            shown = 0
            for a, b in p.diffs:
                if name_of(a if a is not None else b) == n and shown < verbose:
                    print("        strace: %s\n        zvisor: %s" % (a, b), file=out)
                    shown += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", action="count", default=0, help="show differing lines (more -v: more of them)")
    ap.add_argument("--all", action="store_true", help="compare the DIFFERENT calls too")
    ap.add_argument("--corpus", action="store_true", help="run every case of the corpus")
    ap.add_argument("--case", action="append", default=[], help="run this corpus case")
    ap.add_argument("cmd", nargs="*")
    o = ap.parse_args()
    verbose = {0: 0, 1: 3}.get(o.v, 1000)
    if o.cmd:
        report(compare(o.cmd, everything=o.all), verbose)
        return
    names = o.case or (list(GUEST_CASES) + list(REAL_CASES))
    total = Counter()
    for n in names:
        p = run_case(n, o.all)
        if p is None:
            print("%-16s skipped (not installed or not built)" % n)
            continue
        print("%-16s " % n, end="")
        report(p, verbose)
        total += p.by_name()
    print("all: %d differing lines" % sum(total.values()))
    for n, k in total.most_common():
        print("  %5d %s" % (k, n))


if __name__ == "__main__":
    main()
