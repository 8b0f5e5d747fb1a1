"""The guest's vDSO and virtual time.

vDSO: the guest parses the image at AT_SYSINFO_EHDR itself (as Go does),
lists its symbols and versions, finds it in /proc/self/maps as [vdso], and
calls every entry through the symbol it found; the output must be the
native one on every platform, whether the entries lead to the host's code
(--vdso=auto) or into the kernel (--vdso=kernel, --count, --time). A guest
that unmaps its vDSO, and one run without any (--vdso=none), work as
natively. --count shows vDSO calls on rows of their own.

Virtual time: date, python3, a static Go program, raw system calls and libc
see the requested clock, in children too; sleeps and timers follow the rate
(tests/guests/timers.c measures each on the guest's clocks); bad specs are
refused before the guest starts."""
import calendar
import os
import re
import shutil
import time

import pytest

from zvtest import (PLATFORMS, platform_opts, compare, guest, native_ok, parse_count_table, run, run_native,
                    run_zv, status_text)

VARIANTS = ["", ".static", ".static-pie", ".musl"]
DAY = 86400


def built(name):
    path = guest(name)
    if not os.path.exists(path):
        pytest.fail("guest %s is not built: run `make -C tests/guests` (make check builds them)" % name)
    return path


def need(prog):
    if not shutil.which(prog):
        pytest.skip("%s is not installed" % prog)


# --- the vDSO ------------------------------------------------------------

def check_parse_native(res):
    native_ok(0)(res)
    assert "symbol __vdso_clock_gettime@LINUX_2.6 FUNC GLOBAL" in res.stdout, res.stdout
    assert "image in [vdso]: yes" in res.stdout
    assert "differs" not in res.stdout and "failed" not in res.stdout, res.stdout


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("opts", [[], ["--vdso=kernel"], ["--count"], ["--time=offset=0s"]],
                         ids=["auto", "kernel", "count", "time"])
@pytest.mark.parametrize("name", ["vdso" + v for v in VARIANTS])
def test_vdso_as_native(name, opts, platform):
    def same_table(text):  # --count appends its table to stderr
        return text.split("    calls    errors syscall")[0]
    compare([built(name), "parse"], platform, opts, expect_native=check_parse_native,
            normalize_stderr=same_table)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("opts", [["--vdso=kernel"], ["--time=offset=+1s"]], ids=["kernel", "time"])
@pytest.mark.parametrize("name", ["vdso" + v for v in VARIANTS])
def test_vdso_unmapped_by_guest(name, opts, platform):
    """munmap of [vdso] and [vvar], then raw calls, fork and exec (the
    kernel, which reads the clocks through the host's vDSO, stops using
    it)."""
    def check(res):
        native_ok(0)(res)
        assert "[vdso] left: no" in res.stdout and "child: 7" in res.stdout, res.stdout
    compare([built(name), "unmap"], platform, opts, expect_native=check)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("opts", [[], ["--vdso=kernel"], ["--time=offset=+1s"], ["--time=rate=2"]],
                         ids=["auto", "kernel", "time", "rate"])
@pytest.mark.parametrize("name", ["vdso", "vdso.musl"])
def test_time_calls_errors(name, opts, platform):
    """Bad pointers and clocks give the host's errors, through the raw
    calls and the vDSO, whichever way the kernel reads the clocks."""
    def check(res):
        native_ok(0)(res)
        assert "clock_gettime(REALTIME, 8): -14" in res.stdout, res.stdout
    compare([built(name), "efault"], platform, opts, expect_native=check)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["vdso" + v for v in VARIANTS])
def test_vdso_none(name, platform):
    res = run_zv([built(name), "absent"], platform, ["--vdso=none"])
    assert res.returncode == 0, status_text(res.returncode) + res.stderr
    assert res.stdout == ("AT_SYSINFO_EHDR: absent\n[vdso] mapped: no\n"
                          "libc clock_gettime: 0\n"), res.stdout


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vdso_none_go(platform):
    """Go's runtime falls back to system calls without a vDSO."""
    compare([built("goguest"), "chan"], platform, ["--vdso=none"], expect_native=native_ok(4))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("opts", [["--vdso=kernel"], ["--count"], ["--time=offset=+1d"]],
                         ids=["kernel", "count", "time"])
@pytest.mark.parametrize("name", ["vdso", "vdso.musl"])
def test_vdso_calls_bypass_guest_seccomp(name, opts, platform):
    """vDSO calls are no system calls natively: the guest's own seccomp
    filter does not see them, under zvisor either."""
    def check(res):
        native_ok(0)(res)
        assert "libc clock_gettime: 0\n" in res.stdout, res.stdout
    compare([built(name), "seccomp"], platform, opts, expect_native=check,
            normalize_stderr=lambda t: t.split("    calls    errors syscall")[0])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_strict_seccomp_disables_tsc(platform):
    """The host's strict mode disables rdtsc, so the vDSO's clock read
    faults (SIGSEGV); zvisor's emulated strict mode does the same."""
    compare([built("vdso"), "strict"], platform, expect_native=native_ok(-11))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["vdso", "vdso.musl"])
def test_count_shows_vdso_calls(name, platform):
    res = run_zv([built(name), "loop", "1000"], platform, ["--count"])
    assert res.returncode == 0, res.stderr
    got = parse_count_table(res.stderr)
    assert got.get("clock_gettime[vdso]", (0, 0))[0] >= 1000, got
    # the raw calls stay on the plain row, and the vDSO ones are not counted twice
    raw = run_zv([built(name), "raw"], platform, ["--count"])
    got = parse_count_table(raw.stderr)
    assert got.get("clock_gettime", (0, 0))[0] == 1, got
    assert got.get("clock_gettime[vdso]", (0, 0))[0] == 1, got
    assert got.get("gettimeofday", (0, 0))[0] == 1 and got.get("time", (0, 0))[0] == 1, got


@pytest.mark.parametrize("platform", PLATFORMS)
def test_trace_shows_vdso_calls_when_named(platform):
    """zvisor trace shows vDSO calls, marked, when -e trace names them, and
    not otherwise (a default trace stays comparable with strace's)."""
    res = run([str(__import__("zvtest").ZVISOR), "trace", *platform_opts(platform),
               "-e", "trace=clock_gettime", "--", built("vdso"), "loop", "3"])
    assert res.returncode == 0, res.stderr
    lines = [l for l in res.stderr.splitlines() if l.startswith("clock_gettime(")]
    assert len(lines) == 3 and all(l.endswith("= 0 (vDSO)") for l in lines), res.stderr
    assert "CLOCK_MONOTONIC" in lines[0] or "1, {" in lines[0], lines[0]
    res = run([str(__import__("zvtest").ZVISOR), "trace", *platform_opts(platform), "--",
               built("vdso"), "loop", "3"])
    assert "(vDSO)" not in res.stderr, res.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vdso_calls_take_the_fast_path(platform):
    """On the fast platforms the vDSO's stubs are rewritten like any site: 100,000
    clock_gettime calls through the kernel take almost no signals."""
    res = run_zv([built("vdso"), "loop", "100000"], platform, ["--vdso=kernel", "--stats"])
    assert res.returncode == 0, res.stderr
    m = re.search(r"fast=(\d+) sigsys=(\d+)", res.stderr)
    assert m, res.stderr
    fast, sigsys = int(m.group(1)), int(m.group(2))
    if platform.startswith("zpoline") or platform == "stubs":
        assert fast >= 100000, res.stderr
    else:
        assert sigsys >= 100000, res.stderr


# --- virtual time ----------------------------------------------------------

def seconds_of(res):
    assert res.returncode == 0, status_text(res.returncode) + res.stderr
    return [float(x) for x in res.stdout.split()]


def near(got, want, slack=30):
    return abs(got - want) <= slack


@pytest.mark.parametrize("platform", PLATFORMS)
def test_offset_date(platform):
    need("date")
    got = seconds_of(run_zv(["date", "+%s"], platform, ["--time=offset=+3d4h"]))[0]
    assert near(got, time.time() + 3 * DAY + 4 * 3600), got
    got = seconds_of(run_zv(["date", "+%s"], platform, ["--time=offset=-90s"]))[0]
    assert near(got, time.time() - 90, 20), got


@pytest.mark.parametrize("platform", PLATFORMS)
def test_start_date_and_python(platform):
    need("date")
    res = run_zv(["date", "-u", "+%Y-%m-%dT%H:%M"], platform, ["--time=start=2030-01-01T00:00:00Z"])
    assert res.stdout.strip() == "2030-01-01T00:00", res.stdout + res.stderr
    need("python3")
    got = seconds_of(run_zv(["python3", "-c", "import time; print(time.time())"], platform,
                            ["--time=start=2030-01-01T00:00:00Z"]))[0]
    assert 1893456000 <= got < 1893456000 + 30, got


@pytest.mark.parametrize("platform", PLATFORMS)
def test_freeze(platform):
    need("python3")
    got = seconds_of(run_zv(["python3", "-c",
                             "import time; a = time.time(); time.sleep(0.3); print(a, time.time())"],
                            platform, ["--time=freeze=2031-05-06T07:08:09+02:00"]))
    want = calendar.timegm((2031, 5, 6, 5, 8, 9))
    assert got == [want, want], got


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["goguest"])
def test_go_time_now(name, platform):
    """A static Go binary parses the vDSO itself: time.Now() is virtual."""
    res = run_zv([built(name), "time"], platform, ["--time=start=@2000000000"])
    assert res.returncode == 4, status_text(res.returncode) + res.stderr
    m = re.search(r"unix=(\d+) year=(\d+) slept=(\d+)ms", res.stdout)
    assert m, res.stdout
    assert 2000000000 <= int(m.group(1)) < 2000000000 + 30 and m.group(2) == "2033", res.stdout
    assert 100 <= int(m.group(3)) < 2000, res.stdout


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["vdso" + v for v in VARIANTS])
def test_raw_syscalls_and_libc(name, platform):
    """clock_gettime, gettimeofday and time as raw syscalls, and libc's
    clock_gettime through the vDSO: all four agree on the virtual time."""
    got = seconds_of(run_zv([built(name), "raw"], platform, ["--time=start=@2000000000"]))
    assert all(2000000000 <= s < 2000000000 + 30 for s in got), got
    assert max(got) - min(got) <= 1, got


@pytest.mark.parametrize("platform", PLATFORMS)
def test_children_share_the_clock(platform):
    """fork and exec: every process sees the same virtual clock."""
    need("date")
    res = run_zv(["sh", "-c", "date +%s; sh -c 'date +%s'; python3 -c 'import time; print(int(time.time()))'"],
                 platform, ["--time=offset=+1000d"])
    got = seconds_of(res)
    assert len(got) == 3 and all(near(s, time.time() + 1000 * DAY) for s in got), got


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rate_sleep(platform):
    """`sleep 2` under rate=4 takes about 0.5 s of real time."""
    need("sleep")
    t0 = time.monotonic()
    res = run_zv(["sleep", "2"], platform, ["--time=rate=4"])
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    assert 0.4 <= took < 1.6, took


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rate_python_clocks(platform):
    """Under rate=4 time.sleep(1) lasts 1 s on both of python's clocks."""
    need("python3")
    t0 = time.monotonic()
    got = seconds_of(run_zv(["python3", "-c",
                             "import time; a, m = time.time(), time.monotonic(); time.sleep(1); "
                             "print(time.time() - a, time.monotonic() - m)"],
                            platform, ["--time=rate=4"]))
    took = time.monotonic() - t0
    assert all(1.0 <= s < 2.0 for s in got), got
    assert took < 1.5, took


_timers_native = {}


def timers_native(name):
    if name not in _timers_native:
        _timers_native[name] = run_native([built(name)], env=dict(os.environ, TIMERS_MS="100"))
    return _timers_native[name]


@pytest.mark.parametrize("name", ["timers", "timers.static", "timers.musl"])
def test_timers_guest_native(name):
    """The timers guest itself: every case passes natively (musl's select
    does not write the time left back)."""
    res = timers_native(name)
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr
    bad = [l for l in res.stdout.splitlines() if not l.endswith(" ok") and "written back" not in l]
    assert not bad, res.stdout


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name,spec", [("timers", "rate=8"),
                                       ("timers.static", "start=2030-01-01T00:00:00Z,rate=8"),
                                       ("timers.musl", "offset=+20d,clocks=all,rate=8")])
def test_timers_follow_virtual_time(name, spec, platform):
    """Each sleep, timeout and timer lasts its nominal time on the guest's
    clocks (and 8 times less in real time): the output is the native one."""
    native = timers_native(name)
    t0 = time.monotonic()
    zv = run_zv([built(name)], platform, ["--time=" + spec], env=dict(os.environ, TIMERS_MS="400"))
    took = time.monotonic() - t0
    assert (zv.stdout, zv.returncode) == (native.stdout, native.returncode), zv.stdout + zv.stderr
    # 17 waits of 400 ms and an alarm of 1 s, virtual: 7.8 s; real about 1 s
    assert took < 4, took


@pytest.mark.parametrize("platform", PLATFORMS)
def test_freeze_with_rate_sleeps(platform):
    """A frozen calendar clock still lets sleeps pass, at the rate."""
    need("sleep")
    t0 = time.monotonic()
    res = run_zv(["sh", "-c", "date +%s; sleep 2; date +%s"], platform,
                 ["--time=freeze=@1900000000,rate=4"])
    took = time.monotonic() - t0
    assert res.stdout.split() == ["1900000000", "1900000000"], res.stdout + res.stderr
    assert 0.4 <= took < 1.6, took


BAD_SPECS = [
    ("", "empty"),
    ("offset=", "bad duration"),
    ("offset=3x", "bad duration"),
    ("offset=+1d,start=2030-01-01T00:00:00Z", "only one"),
    ("start=2030-13-01T00:00:00Z", "bad time"),
    ("start=tomorrow", "bad time"),
    ("freeze=2030-02-30", "bad time"),
    ("rate=0", "rate must be a positive"),
    ("rate=-2", "rate must be a positive"),
    ("rate=fast", "rate must be a positive"),
    ("clocks=sundial", "unknown clock 'sundial'"),
    ("speed=2", "unknown item 'speed'"),
    ("offset=-10000d,clocks=monotonic", "monotonic clock would be negative"),
]


@pytest.mark.parametrize("spec,why", BAD_SPECS, ids=[s or "empty" for s, _ in BAD_SPECS])
def test_bad_spec(spec, why, tmp_path):
    marker = tmp_path / "ran"
    res = run_zv(["sh", "-c", "touch %s" % marker], None, ["--time=" + spec])
    assert res.returncode == 2, status_text(res.returncode)
    assert why in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("zvisor: --time:"), res.stderr
    assert not marker.exists(), "the guest ran"


def test_bad_vdso_mode():
    res = run_zv(["true"], None, ["--vdso=maybe"])
    assert res.returncode == 2 and "unknown vDSO mode 'maybe'" in res.stderr, res.stderr


def test_help_documents_time():
    res = run([str(__import__("zvtest").ZVISOR), "run", "--help"])
    assert "--time=SPEC" in res.stdout and "--vdso=MODE" in res.stdout
