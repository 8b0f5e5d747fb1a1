"""Syscall User Dispatch off while every executable byte is covered
(intercept/sudoff.c, DESIGN "Jump stubs and SUD off"): the sudoff guest (no libc, every
syscall in a function the loader judges) runs natively and under the stubs
platform with --stats. Fully covered, SUD goes off (sudoff=1); code mapped
later that holds a raw `syscall` (W^X or RWX) still reaches the kernel
(through SIGSYS, and --count counts it) and SUD stays armed. The host's
vDSO code has syscalls (its fallbacks): they become stubs too, unless the
kernel calls that code itself."""
import re
import shutil
import subprocess

import pytest

import zvtest
from guestdesc import builds, check_native, compare_guest
from test_fastpath import stats_of, strip_stats


def run_both(mode, opts):
    exe = zvtest.guest("sudoff")
    nat = check_native("sudoff", mode)
    zv = zvtest.run_zv([exe, mode], "stubs", opts)
    assert (zv.stdout, zv.returncode) == (nat.stdout, nat.returncode), zv.stderr
    return zv


def test_covered_static_program_runs_with_sud_off():
    s = stats_of(run_both("covered", ["--stats"]).stderr)
    assert (s["sudoff"], s["uncovered"], s["taint"], s["sigsys"]) == (1, 0, 0, 0), s


@pytest.mark.parametrize("mode,taint", [("newcode", 1), ("rwx", 2)])
def test_new_code_with_a_raw_syscall_is_still_seen(mode, taint):
    zv = run_both(mode, ["--stats"])
    s = stats_of(zv.stderr)
    # the new code's syscall arrived through the catch-all, and SUD stayed on
    assert (s["sudoff"], s["taint"], s["sigsys"]) == (0, taint, 1), s
    assert strip_stats(zv.stderr) == ""
    counted = run_both(mode, ["--count"])
    rows = dict((m.group(2), int(m.group(1))) for m in re.finditer(r"^\s*(\d+)\s+.*?(\w+)$", counted.stderr, re.M))
    assert rows.get("getppid") == 1002, counted.stderr  # 1 + 1000 + the new code's


@pytest.mark.parametrize("mode", ["edge", "edge-high"])
def test_a_pair_across_two_mappings_is_seen(mode):
    """A file's two pages mapped executable side by side, one mapping
    each, with `0f 05` across their edge: whichever is mapped second finds
    the pair with its neighbour's byte, and SUD stays armed (taint 1)."""
    s = stats_of(run_both(mode, ["--stats"]).stderr)
    assert (s["sudoff"], s["taint"]) == (0, 1), s


def test_sud_is_off_in_threads_too():
    """A second thread (a raw clone) arms itself before it runs guest code
    and settles like the first; its getppid is seen, and SUD is off at the
    end."""
    s = stats_of(run_both("thread", ["--stats"]).stderr)
    assert (s["sudoff"], s["taint"], s["sigsys"]) == (1, 0, 0), s
    counted = run_both("thread", ["--count"])
    assert re.search(r"^\s*1002\s+getppid$", counted.stderr, re.M), counted.stderr


@pytest.mark.parametrize("vdso,sudoff,taint", [("auto", 1, 0), ("none", 1, 0), ("kernel", 0, 8)])
def test_vdso_fallbacks(vdso, sudoff, taint):
    """The host's vDSO code: its fallback syscalls become stubs (auto), or
    there is none (none); with its entries leading into the kernel, the
    kernel reads the clocks through it itself, so its syscalls stay and so
    does SUD (kernel)."""
    zv = run_both("covered", ["--stats", "--vdso=" + vdso])
    s = stats_of(zv.stderr)
    assert (s["sudoff"], s["taint"]) == (sudoff, taint), s


@pytest.mark.parametrize("build", builds("switchsys"))
def test_jump_table_cases_get_windows(build):
    """A switch's jump table: its bound check and its entries prove where
    it lands, so the syscalls in its cases become windows (no SIGSYS at
    all, where before each was one), and a static program whose only
    syscalls sit there still runs with SUD off."""
    nat = check_native(build)
    zv = zvtest.run_zv([zvtest.guest(build)], "stubs", ["--stats", "--no-cache"])
    assert (zv.stdout, zv.returncode) == (nat.stdout, nat.returncode), zv.stderr
    s = stats_of(zv.stderr)
    assert s["sigsys"] == 0, s
    if build != "switchsys":  # static: nothing else to leave uncovered
        assert (s["sudoff"], s["uncovered"]) == (1, 0), s


def test_every_kind_of_code_is_judged():
    """coverage.S holds each kind of code that kept real programs' SUD
    armed: a jump table bounded in memory, a function whose CFI ends
    before its syscall and goes on, a longjmp-like indirect jump (its
    syscall through a trampoline), code without an FDE, an FDE longer than
    512 bytes, a function over 64 KiB, an FDE with its own CIE, zeros
    between code sections. Every pair is judged and every syscall takes a
    stub, cold (decoded) and warm (from the cache): SUD goes off."""
    nat = check_native("coverage")
    for opts in (["--no-cache"], [], []):
        zv = zvtest.run_zv([zvtest.guest("coverage")], "stubs", ["--stats"] + opts)
        assert (zv.stdout, zv.returncode) == (nat.stdout, nat.returncode), zv.stderr
        s = stats_of(zv.stderr)
        assert (s["sudoff"], s["uncovered"], s["taint"], s["sigsys"]) == (1, 0, 0, 0), (opts, s)


def test_data_in_text_keeps_sud_armed():
    """A syscall byte pair in data between functions (textdata.S) is in no
    instruction the decode can show: it stays uncovered, SUD stays armed,
    and the program's calls still arrive (through stubs)."""
    nat = check_native("textdata")
    zv = zvtest.run_zv([zvtest.guest("textdata")], "stubs", ["--stats", "--no-cache"])
    assert (zv.stdout, zv.returncode) == (nat.stdout, nat.returncode), zv.stderr
    s = stats_of(zv.stderr)
    assert (s["sudoff"], s["uncovered"], s["taint"], s["sigsys"]) == (0, 1, 1, 0), s


@pytest.mark.parametrize("platform", zvtest.PLATFORMS)
@pytest.mark.parametrize("mode", ["syscall", "clean", "remap", "blocked"])
@pytest.mark.parametrize("build", builds("jitrace", subset=True))
def test_threads_race_to_run_new_code(build, mode, platform):
    """Four threads call each new JIT page from the moment its address is
    published (jitrace.c): none runs it before it is executable, and with
    SUD off in the threads, none runs its syscall unseen (the call would
    return zvisor's own break). 50 processes race once each (the first
    syscall arms SUD for good); pages without a syscall race 300 times in
    one process, and a file page mapped again over itself while they run.
    Threads blocked in read, nanosleep and poll when SUD is armed in every
    thread go on as they were (the interrupted calls made again, with the
    time they had left)."""
    compare_guest(build, platform, mode)


@pytest.mark.parametrize("mode", ["clean", "remap"])
def test_sud_stays_off_in_threads_with_clean_new_code(mode):
    """New code without a syscall, scanned before it became executable,
    leaves SUD off in a process of five threads."""
    zv = zvtest.run_zv([zvtest.guest("jitrace"), mode], "stubs", ["--stats"])
    s = stats_of(zv.stderr)
    assert (s["sudoff"], s["taint"], s["sigsys"] - s["restorers"]) == (1, 0, 0), s


THREADED_PY = ("import threading\n"
               "def work():\n"
               "    for _ in range(200):\n"
               "        open('/dev/null').close()\n"
               "ts = [threading.Thread(target=work) for _ in range(4)]\n"
               "[t.start() for t in ts]\n"
               "[t.join() for t in ts]\n"
               "print('threads done')\n")


def real_programs(tmp):
    """The programs SUD must be off in: (name, argv, cwd)."""
    hello = tmp / "hello.c"
    hello.write_text("int main(void) { return 0; }\n")
    repo = tmp / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f").write_text("x\n")
    return [
        ("sh", ["/bin/sh", "-c", "echo shell"]),
        ("coreutils", ["/bin/ls", "/"]),
        ("coreutils", ["/bin/cat", "/etc/hostname"]),
        ("python3", ["/usr/bin/python3", "-c", "print('python')"]),
        ("python3, threaded", ["/usr/bin/python3", "-c", THREADED_PY]),
        ("git", ["git", "-C", str(repo), "status", "--short"]),
        ("gcc", ["gcc", "-c", str(hello), "-o", str(tmp / "hello.o")]),
        ("sqlite3", ["sqlite3", ":memory:", "select 6 * 7;"]),
        ("Go, static", [zvtest.guest("goguest"), "chan"]),
        ("Go, 8 goroutines on 4 threads", [zvtest.guest("goguest"), "goroutines"]),
    ]


@pytest.mark.parametrize("which", range(10))
def test_sud_off_in_real_programs(which, tmp_path):
    """Every process of these programs ends with SUD off (--stats: sudoff=1,
    nothing uncovered, no taint), threaded ones included, and prints what
    it prints natively."""
    name, argv = real_programs(tmp_path)[which]
    if not shutil.which(argv[0]):
        pytest.skip("%s is not installed" % argv[0])
    nat = zvtest.run_native(argv)
    zv = zvtest.run_zv(argv, "stubs", ["--stats"])
    assert (zv.stdout, zv.returncode) == (nat.stdout, nat.returncode), (name, zv.stderr)
    lines = re.findall(r"^zvisor: stats: .*$", zv.stderr, re.M)
    assert lines, zv.stderr
    for line in lines:
        s = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", line))
        assert (s["sudoff"], s["uncovered"], s["taint"]) == (1, 0, 0), (name, line)


@pytest.mark.parametrize("how", ["inprocess", "host"])
def test_sud_off_after_exec(how):
    """An image exec'd by a threaded python3 (its threads gone) starts with
    what the old image found forgotten: SUD off in the new one, by either
    exec."""
    argv = ["/usr/bin/python3", "-c", THREADED_PY.replace("print('threads done')",
                                                          "import os; os.execv('/bin/echo', ['echo', 'exec done'])")]
    nat = zvtest.run_native(argv)
    zv = zvtest.run_zv(argv, "stubs", ["--stats", "--exec=" + how])
    assert (zv.stdout, zv.returncode) == (nat.stdout, nat.returncode) == ("exec done\n", 0), zv.stderr
    s = stats_of(zv.stderr)
    assert (s["sudoff"], s["uncovered"], s["taint"], s["inexec"]) == (1, 0, 0, int(how == "inprocess")), s

