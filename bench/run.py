#!/usr/bin/env python3
"""Run the zvisor microbenchmark natively and under every runner, interleaved.

For each repetition, for each operation, every available runner runs
build/bench/microbench once (one process per measurement, so that every runner
pays its own start-up outside the timed loop and no measurement inherits
another's state).  The reported figure is the median over the repetitions of
each process's own median batch.  See bench/README.md.

Writes bench/results/micro.json, micro.md and (with matplotlib) micro.png.
Standard library only; matplotlib is optional.
"""

import argparse
import datetime
import json
import os
import re
import statistics
import sys
import time

import common
from common import (ROOT, add_common_options, ensure_matplotlib, ensure_tool, find_runsc_prefix,
                    fmt_faster, fmt_ratio, fmt_sig, guarded_main, last_line, loadavg, log,
                    machine_info, markdown_table, plot_ratios, run_cmd, runsc_cleanup,
                    shown_path, status_text, text_table, why_line, work_env)

ZVISOR = common.ZVISOR
MICROBENCH = os.path.join(ROOT, "build", "bench", "microbench")

# (microbench op, row label).  Labels are the rows of bench/README.md.
OPS = [
    ("getpid", "getpid"),
    ("getppid", "getppid"),
    ("read", "read 1 byte /dev/zero"),
    ("write", "write 1 byte /dev/null"),
    ("stat", "stat"),
    ("openclose", "open+close"),
    ("openwclose", "open O_WRONLY+close"),
    ("opentrunc", "open O_CREAT|O_TRUNC+close"),
    ("fcntl", "fcntl F_GETFL"),
    ("clock_gettime", "clock_gettime (vDSO)"),
    ("select10", "select-10"),
    ("select100", "select-100"),
    ("select1000", "select-1000"),
    ("fork", "fork+exit+wait"),
    ("exec", "fork+execve /bin/true"),
    ("sh", "fork+sh -c true"),
]
OP_LABEL = dict(OPS)

# Rows whose cost is one cheap system call: the "syscall-bound rows".
# select-100/1000 are left out: the host's own per-fd scan dominates them
# (select-1000 costs ~10 us natively, a tenth of a strace stop), so no
# interposer can be 100x faster than strace there.
SYSCALL_BOUND = ["getpid", "getppid", "read", "write", "stat", "openclose", "select10"]
HOST_BOUND = ["getppid", "read", "write"]

ZVISOR_PLATFORMS = ["stubs", "zpoline", "sud", "seccomp"]
KVM_PROBE_TIMEOUT = 20.0

# `zvisor trace` against strace writing to a real file.  The trace
# runners write to files in the private directory (rewritten at each run).
TRACE_FASTER_THAN_STRACE = 20
TRACE_C_MAX_RATIO = 1.5


# ---------------------------------------------------------------------------
# runners

class Runner:
    def __init__(self, key, label, prefix, kind):
        self.key = key
        self.label = label
        self.prefix = prefix
        self.kind = kind          # native, zvisor, strace, gvisor
        self.available = False
        self.reason = ""
        self.note = ""            # e.g. a platform fallback message
        self.env = work_env()
        self.timeouts = set()     # ops that timed out once: not run again

    def argv(self, *args):
        return self.prefix + [MICROBENCH] + list(args)


def probe_microbench(runner, timeout):
    """Run a tiny measurement; return None if it works, else why not."""
    rc, out, err, secs = run_cmd(runner.argv("-b", "1", "-t", "0.01", "getpid"), timeout,
                                 env=runner.env)
    if runner.kind == "gvisor":
        runsc_cleanup()
    if rc is None:
        return f"did not finish within {timeout:.0f} s"
    if rc != 0 or "ns_per_op=" not in out:
        return f"{status_text(rc)}: {why_line(err) or why_line(out) or 'no output'}"
    return None


def make_runners(args):
    wanted = set(args.runners.split(",")) | {"native"} if args.runners else None

    def want(key):
        return wanted is None or key in wanted

    runners = []
    native = Runner("native", "native", [], "native")
    native.available = True
    runners.append(native)

    for plat in ZVISOR_PLATFORMS:
        if not want(f"zvisor-{plat}"):
            continue
        r = Runner(f"zvisor-{plat}", f"zvisor {plat}",
                   [ZVISOR, "run", f"--platform={plat}", "--"], "zvisor")
        if not os.access(ZVISOR, os.X_OK):
            r.reason = f"{ZVISOR} not built (run make)"
        else:
            # zpoline joins by itself once this works; until then it is
            # listed as unavailable with zvisor's own message.
            rc, out, err, _ = run_cmd(r.prefix + ["/bin/true"], 30)
            if rc != 0:
                status = "timed out" if rc is None else status_text(rc)
                r.reason = (f"`zvisor run --platform={plat} -- /bin/true`: {status}"
                            + (f": {why_line(err)}" if why_line(err) else ""))
            else:
                r.reason = probe_microbench(r, 60) or ""
                r.available = not r.reason
                # e.g. zpoline falling back to sud without page 0: say so.
                r.note = last_line(err)
        runners.append(r)

    # gVisor: runsc from Debian, host filesystem read-only under a memory
    # overlay, no network at all (--network=none).
    gv_ptrace = Runner("gvisor-ptrace", "gVisor runsc ptrace", [], "gvisor")
    gv_kvm = Runner("gvisor-kvm", "gVisor runsc kvm", [], "gvisor")
    why = None
    if want("gvisor-ptrace") or want("gvisor-kvm"):
        why = ensure_tool("runsc", "runsc", not args.no_install)
    flags_ok = None
    if not want("gvisor-ptrace") and not want("gvisor-kvm"):
        pass
    elif why:
        gv_ptrace.reason = gv_kvm.reason = why
    else:
        def probe(prefix):
            gv_ptrace.prefix = prefix
            return probe_microbench(gv_ptrace, 60)

        prefix, flags_ok, why = find_runsc_prefix(probe)
        gv_ptrace.prefix = prefix or []
        gv_ptrace.reason = why or ""
        gv_ptrace.available = prefix is not None
        if not want("gvisor-kvm"):
            pass
        elif args.skip_kvm:
            gv_kvm.reason = "not tried (--skip-kvm)"
        elif not os.path.exists("/dev/kvm"):
            gv_kvm.reason = "no /dev/kvm"
        else:
            gv_kvm.prefix = (["runsc", "--platform=kvm", "--network=none"]
                             + (flags_ok or []) + ["do"])
            log(f"probing gVisor KVM platform (up to {KVM_PROBE_TIMEOUT:.0f} s)...")
            err = probe_microbench(gv_kvm, KVM_PROBE_TIMEOUT)
            if err and err.startswith("did not finish"):
                err = (f"`runsc --platform=kvm do` {err} (this runsc's KVM platform is "
                       f"known to hang on nested /dev/kvm)")
            gv_kvm.reason = err or ""
            gv_kvm.available = not err
    runners += [r for r in (gv_ptrace, gv_kvm) if want(r.key)]

    runners += trace_runners(want, args)
    return runners


def trace_runners(want, args):
    """zvisor trace and strace, each writing its trace somewhere."""
    tmp = work_env()["TMPDIR"]
    specs = [
        ("zvisor-trace", "zvisor trace -f -o FILE", "zvisor",
         [ZVISOR, "trace", "-f", "-o", os.path.join(tmp, "zvisor-trace.txt"), "--"]),
        ("zvisor-trace-c", "zvisor trace -f -c -o FILE", "zvisor",
         [ZVISOR, "trace", "-f", "-c", "-o", os.path.join(tmp, "zvisor-trace-c.txt"), "--"]),
        ("strace", "strace -f", "strace", ["strace", "-f", "-o", "/dev/null"]),
        ("strace-o", "strace -f -o FILE", "strace",
         ["strace", "-f", "-o", os.path.join(tmp, "strace.txt")]),
    ]
    out = []
    for key, label, kind, prefix in specs:
        if not want(key):
            continue
        r = Runner(key, label, prefix, kind)
        why = None
        if kind == "strace":
            why = ensure_tool("strace", "strace", not args.no_install)
        elif not os.access(ZVISOR, os.X_OK):
            why = f"{ZVISOR} not built (run make)"
        r.reason = why or probe_microbench(r, 60) or ""
        r.available = not r.reason
        out.append(r)
    return out


# ---------------------------------------------------------------------------
# measuring

RESULT_RE = re.compile(r"op=(\S+) ns_per_op=([\d.]+) min=([\d.]+) max=([\d.]+) "
                       r"batches=(\d+) iters_per_batch=(\d+)")


def measure(runner, op, args):
    # A measurement takes about budget seconds plus start-up and calibration;
    # one that hangs is killed, and that op is not tried again on that runner.
    timeout = max(30.0, 20 * args.budget)
    if op in runner.timeouts:
        return None, "not run again after timing out", 0.0
    rc, out, err, secs = run_cmd(
        runner.argv("-b", str(args.batches), "-t", str(args.budget), op), timeout,
        env=runner.env)
    if runner.kind == "gvisor":
        runsc_cleanup()
    m = RESULT_RE.search(out or "")
    if rc == 0 and m:
        return float(m.group(2)), None, secs
    if rc is None:
        runner.timeouts.add(op)
        return None, f"timed out after {timeout:.0f} s", secs
    return None, f"{status_text(rc)}: {why_line(err) or why_line(out) or 'no output'}", secs


def run_all(runners, ops, args):
    active = [r for r in runners if r.available]
    samples = {op: {r.key: [] for r in active} for op in ops}
    errors = {op: {r.key: [] for r in active} for op in ops}
    for rep in range(args.reps):
        # Rotate the order each repetition so no runner always follows another.
        order = active[rep % len(active):] + active[:rep % len(active)]
        for op in ops:
            parts = []
            for r in order:
                ns, err, secs = measure(r, op, args)
                if ns is None:
                    errors[op][r.key].append(err)
                    parts.append(f"{r.key}=FAIL")
                else:
                    samples[op][r.key].append(ns)
                    parts.append(f"{r.key}={fmt_us(ns / 1000)}")
            log(f"[rep {rep + 1}/{args.reps}] {OP_LABEL[op]:<22} " + "  ".join(parts))
    return samples, errors


# ---------------------------------------------------------------------------
# formatting

def fmt_us(us):
    return fmt_sig(us)


def medians(samples):
    return {op: {k: (statistics.median(v) if v else None) for k, v in per.items()}
            for op, per in samples.items()}


def build_table(runners, ops, med, errors):
    active = [r for r in runners if r.available]
    header = ["op"] + [r.label for r in active]
    rows = []
    for op in ops:
        row = [OP_LABEL[op]]
        base = med[op].get("native")
        for r in active:
            v = med[op].get(r.key)
            if v is None:
                row.append("fails")
            elif r.key == "native" or not base:
                row.append(fmt_us(v / 1000))
            else:
                row.append(f"{fmt_us(v / 1000)} ({fmt_ratio(v / base)})")
        rows.append(row)
    return header, rows


# ---------------------------------------------------------------------------
# the fast path's and trace's targets

def med_ratio(med, op, key, base_key="native"):
    a, b = med.get(op, {}).get(key), med.get(op, {}).get(base_key)
    return a / b if a and b else None


def target_entry(med, key, plat, name, checks, fmt, single=False):
    """The entry for one target of runner key, from checks: [(op, value, ok)];
    None when no row can be judged.  key's own failed cell fails the target
    ("fails"); a row whose other side (native, sud, strace) failed is left out."""
    checks = [(op, v, ok and v is not None) for op, v, ok in checks
              if v is not None or med.get(op, {}).get(key) is None]
    if not checks:
        return None
    show = lambda v: "fails" if v is None else fmt(v)
    if single:
        detail = show(checks[0][1])
    else:
        detail = ", ".join(f"{OP_LABEL[op]} {show(v)}" for op, v, _ in checks)
    return {"platform": plat, "target": name,
            "ok": all(ok for _, _, ok in checks), "detail": detail}


def evaluate_targets(runners, med, ops):
    """One entry per (zvisor platform, target), then the trace targets."""
    keys = {r.key for r in runners if r.available}
    out = []
    ratio = lambda op, key, base_key="native": med_ratio(med, op, key, base_key)

    for plat in ZVISOR_PLATFORMS:
        key = f"zvisor-{plat}"
        if key not in keys:
            continue

        def add(name, checks, fmt, single=False):
            entry = target_entry(med, key, plat, name, checks, fmt, single)
            if entry:
                out.append(entry)

        add("host-bound call (getppid, read, write) <= 1.10x native",
            [(op, ratio(op, key), (ratio(op, key) or 0) <= 1.10)
             for op in HOST_BOUND if op in ops], fmt_ratio)
        if "exec" in ops:
            add("fork+execve /bin/true <= 1.2x native",
                [("exec", ratio("exec", key), (ratio("exec", key) or 0) <= 1.2)], fmt_ratio,
                single=True)
        if "getpid" in ops:
            add("getpid answered by the kernel <= 0.25x native",
                [("getpid", ratio("getpid", key), (ratio("getpid", key) or 0) <= 0.25)],
                fmt_ratio, single=True)
        rows = [op for op in SYSCALL_BOUND if op in ops]
        if plat != "sud" and "zvisor-sud" in keys:
            checks = []
            for op in rows:
                r = ratio(op, "zvisor-sud", key)    # how many times faster than sud
                checks.append((op, r, (r or 0) >= 10))
            add("syscall-bound rows >= 10x faster than zvisor sud", checks, fmt_faster)
        if "strace" in keys:
            checks = []
            for op in rows:
                r = ratio(op, "strace", key)
                checks.append((op, r, (r or 0) >= 100))
            add("syscall-bound rows >= 100x faster than strace", checks, fmt_faster)
    return out + trace_targets(keys, med, ops)


def trace_targets(keys, med, ops):
    """`zvisor trace -f -o FILE` against strace writing to a real
    file (strace -f -o /dev/null when strace-o was not run) on the
    syscall-bound rows, and `zvisor trace -f -c` against native on all rows."""
    out = []
    rows = [op for op in SYSCALL_BOUND if op in ops]
    strace = "strace-o" if "strace-o" in keys else "strace"
    if "zvisor-trace" in keys and strace in keys:
        checks = [(op, med_ratio(med, op, strace, "zvisor-trace"), None) for op in rows]
        checks = [(op, r, (r or 0) >= TRACE_FASTER_THAN_STRACE) for op, r, _ in checks]
        name = "-o FILE" if strace == "strace-o" else "-o /dev/null"
        out.append(target_entry(med, "zvisor-trace", "trace",
                                f"trace -f -o FILE >= {TRACE_FASTER_THAN_STRACE}x faster than "
                                f"strace -f {name} on syscall-bound rows", checks, fmt_faster))
    if "zvisor-trace-c" in keys:
        checks = [(op, med_ratio(med, op, "zvisor-trace-c"), None) for op in ops]
        checks = [(op, r, (r or 0) <= TRACE_C_MAX_RATIO) for op, r, _ in checks]
        out.append(target_entry(med, "zvisor-trace-c", "trace-c",
                                f"trace -f -c <= {TRACE_C_MAX_RATIO}x native", checks, fmt_ratio))
    return [t for t in out if t]


def target_lines(targets, runners):
    lines = []
    have_zpoline = any(r.key == "zvisor-zpoline" and r.available for r in runners)
    if not have_zpoline:
        lines.append("(the targets are for --platform=zpoline, which this zvisor does not "
                     "have yet; the SIGSYS platforms are shown against them for reference "
                     "and are expected to fail)")
    for t in targets:
        lines.append(f"{'PASS' if t['ok'] else 'FAIL'}  {t['platform']:<8} {t['target']}: "
                     f"{t['detail']}")
    return lines


# ---------------------------------------------------------------------------
# outputs

def spread_table(runners, ops, samples):
    active = [r for r in runners if r.available]
    header = ["op"] + [r.label for r in active]
    rows = []
    for op in ops:
        row = [OP_LABEL[op]]
        for r in active:
            v = samples[op].get(r.key) or []
            row.append(f"{fmt_us(min(v) / 1000)}-{fmt_us(max(v) / 1000)}" if v else "-")
        rows.append(row)
    return header, rows


def write_png(path, runners, ops, med):
    others = [r for r in runners if r.available and r.key != "native"]
    groups = [f"{OP_LABEL[op]}\n(native {fmt_us(med[op]['native'] / 1000)} µs)"
              if med[op].get("native") else OP_LABEL[op] for op in ops]

    def cell(op, key):
        if not med[op].get("native"):
            return "skip"               # native failed: nothing to compare with
        return med_ratio(med, op, key)  # None: this runner's cell failed

    series = [(r.label, [cell(op, r.key) for op in ops]) for r in others]
    plot_ratios(path, groups, series, "time per operation / native (log scale)",
                "zvisor microbenchmark: time per operation relative to native "
                "(median of interleaved runs; lower is better)")


def main():
    return guarded_main(run_main)


def run_main():
    global ZVISOR
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--budget", type=float, default=0.3,
                    help="seconds of timed batches per measurement (default 0.3)")
    ap.add_argument("--batches", type=int, default=5, help="timed batches per measurement")
    ap.add_argument("--ops", help="comma-separated subset of: " + ",".join(o for o, _ in OPS))
    ap.add_argument("--runners", help="comma-separated subset of runner keys "
                    "(zvisor-sud, zvisor-seccomp, zvisor-zpoline, zvisor-trace, "
                    "zvisor-trace-c, strace, strace-o, gvisor-ptrace, gvisor-kvm); "
                    "native is always run")
    ap.add_argument("--skip-kvm", action="store_true",
                    help=f"do not try gVisor's KVM platform (a {KVM_PROBE_TIMEOUT:.0f} s probe)")
    add_common_options(ap, "strace and runsc (root, apt-get) and matplotlib (pip)")
    args = ap.parse_args()
    ZVISOR = os.path.abspath(args.zvisor)

    if args.install_deps_only:
        bad = [w for w in (ensure_tool("strace", "strace", True),
                           ensure_tool("runsc", "runsc", True),
                           ensure_matplotlib(True)) if w]
        for w in bad:
            log(w)
        return 0      # the runners report what is missing; never fail the build

    if args.reps < 1 or args.batches < 1 or args.budget <= 0:
        ap.error("--reps, --batches and --budget must be positive")
    ops = [o for o, _ in OPS]
    if args.ops:
        ops = args.ops.split(",")
        unknown = [o for o in ops if o not in OP_LABEL]
        if unknown:
            ap.error(f"unknown op(s) in --ops: {', '.join(unknown)}")
    if not os.access(MICROBENCH, os.X_OK):
        log(f"{MICROBENCH} is missing: build it with `make -C bench build`")
        return 1

    t0 = time.monotonic()
    load_before = loadavg()
    runners = make_runners(args)
    for r in runners:
        state = "ok" if r.available else f"unavailable: {r.reason}"
        if r.note:
            state += f" (it said: {r.note})"
        log(f"runner {r.label:<22} {state}")
    log(f"measuring: {args.reps} repetitions x {len(ops)} ops x "
        f"{sum(r.available for r in runners)} runners, interleaved")

    samples, errors = run_all(runners, ops, args)
    med = medians(samples)
    header, rows = build_table(runners, ops, med, errors)
    targets = evaluate_targets(runners, med, ops)
    elapsed = time.monotonic() - t0
    info = machine_info(ZVISOR)
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")

    unavailable = [r for r in runners if not r.available]
    failures = []
    label = {r.key: r.label for r in runners}
    for op in ops:
        for key, errs in errors[op].items():
            if errs:
                why = "; ".join(dict.fromkeys(errs))      # distinct reasons, in order
                failures.append(f"{OP_LABEL[op]} under {label[key]}: {len(errs)}/{args.reps} "
                                f"runs failed: {why}")

    title = (f"µs per operation, median of {args.reps} interleaved runs "
             f"(each the median of {args.batches} batches); (Nx) = ratio to native")
    print()
    print(title)
    print(text_table(header, rows))
    if unavailable:
        print()
        for r in unavailable:
            print(f"unavailable: {r.label}: {r.reason}")
    if failures:
        print()
        for f in failures:
            print(f"failed: {f}")
    print()
    print("targets:")
    for line in target_lines(targets, runners):
        print("  " + line)

    os.makedirs(args.out, exist_ok=True)
    runner_json = [{"key": r.key, "label": r.label, "available": r.available,
                    "reason": r.reason or None, "note": r.note or None,
                    "command": (r.prefix + ["microbench"]) if r.prefix or r.key == "native"
                    else None} for r in runners]
    data = {
        "date": when,
        "machine": info,
        "settings": {"reps": args.reps, "batches": args.batches, "budget_s": args.budget,
                     "elapsed_s": round(elapsed, 1)},
        "unit": "ns per operation",
        "ops": [{"key": op, "label": OP_LABEL[op]} for op in ops],
        "runners": runner_json,
        "samples_ns": samples,
        "errors": {op: {k: v for k, v in per.items() if v} for op, per in errors.items()},
        "median_ns": med,
        "ratio_to_native": {op: {k: (v / med[op]["native"] if v and med[op].get("native")
                                     else None) for k, v in per.items()}
                            for op, per in med.items()},
        "targets": targets,
    }
    with open(os.path.join(args.out, "micro.json"), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

    sh, srows = spread_table(runners, ops, samples)
    md = [f"# zvisor microbenchmark", "",
          f"{when}; {info.get('cpu', '?')}, {info.get('cpus')} CPUs, Linux {info['kernel']}, "
          f"{info['glibc']}; zvisor: {info.get('zvisor')}; runsc: {info.get('runsc')}; "
          f"{info.get('strace')}. Whole run: {elapsed:.0f} s; load average "
          f"before {load_before}, after {info['loadavg']} (other work on the machine "
          f"shows in the spread below).", "",
          f"{title}. Static microbenchmark issuing raw `syscall` instructions "
          f"(bench/microbench.c).", "", markdown_table(header, rows), ""]
    if unavailable:
        md += ["Unavailable runners:", ""] + [f"- {r.label}: {r.reason}" for r in unavailable]
        md.append("")
    if failures:
        md += ["Failures:", ""] + [f"- {f}" for f in failures] + [""]
    notes = []
    cg = med.get("clock_gettime", {})
    if cg.get("native") and (cg.get("gvisor-ptrace") or 0) > 10 * cg["native"]:
        notes.append("gVisor's clock_gettime costs a system call here: its vDSO falls back to "
                     "the real call (`runsc --strace do ...` shows every clock_gettime), so "
                     "that cell measures a ptrace round trip, not a vDSO read.")
    notes += [f"{r.label} printed: {r.note}" for r in runners if r.note]
    if notes:
        md += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    md += ["## Targets", ""] + [f"- {l}" for l in target_lines(targets, runners)] + [""]
    md += ["## Spread across runs (µs, lowest-highest per-run median)", "",
           "Ptrace-based runners (strace, gVisor ptrace) swing several times with the load "
           "on the other vCPU; quote them as ranges.", "", markdown_table(sh, srows), ""]
    with open(os.path.join(args.out, "micro.md"), "w") as f:
        f.write("\n".join(md))

    png = os.path.join(args.out, "micro.png")
    why = ensure_matplotlib(not args.no_install)
    if why:
        print(f"\nno PNG: {why}")
    else:
        try:
            write_png(png, runners, ops, med)
        except Exception as e:      # a broken matplotlib must not lose the table
            print(f"\nno PNG: plotting failed: {e}")
            png = None
    outs = ["micro.json", "micro.md"] + (["micro.png"] if not why and png else [])
    shown = shown_path(args.out)
    print(f"\nwrote {', '.join(os.path.join(shown, o) for o in outs)}"
          f" ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
