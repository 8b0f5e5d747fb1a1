"""Syscall User Dispatch off while every executable byte is covered
(intercept/sudoff.c, DESIGN section 12): the sudoff guest (no libc, every
syscall in a function the loader judges) runs natively and under the stubs
platform with --stats. Fully covered, SUD goes off (sudoff=1); code mapped
later that holds a raw `syscall` (W^X or RWX) still reaches the kernel
(through SIGSYS, and --count counts it) and SUD stays armed. The host's
vDSO holds syscalls (its fallbacks), so these runs use --vdso=none."""
import re

import pytest

import zvtest
from guestdesc import check_native
from test_fastpath import stats_of, strip_stats


def run_both(mode, opts):
    exe = zvtest.guest("sudoff")
    nat = check_native("sudoff", mode)
    zv = zvtest.run_zv([exe, mode], "stubs", ["--vdso=none"] + opts)
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


def test_default_vdso_keeps_sud_armed():
    """The host's vDSO has syscalls in its fallbacks: not covered."""
    exe = zvtest.guest("sudoff")
    zv = zvtest.run_zv([exe, "covered"], "stubs", ["--stats"])
    s = stats_of(zv.stderr)
    assert s["sudoff"] == 0 and s["taint"] == 8, s
