#!/usr/bin/env python3
"""Run whole-program workloads natively and under every runner, interleaved.

For each repetition, for each workload, every available runner runs the
workload once (the runner order rotates between repetitions), in a fresh
directory under the private /tmp/zvbench-* directory.  A run counts only when
its output passes the workload's check; otherwise the cell shows `fails` and
the reason is listed.  Batch workloads report wall-clock seconds (lower is
better); server workloads report requests per second (higher is better).
See bench/README.md.

Writes bench/results/workloads.json, workloads.md and (with matplotlib)
workloads.png.  Standard library only; matplotlib is optional.
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import time

import common
from common import (add_common_options, ensure_matplotlib, ensure_tool, find_runsc_prefix,
                    fmt_faster, fmt_ratio, guarded_main, loadavg, log, machine_info,
                    markdown_table, plot_ratios, run_cmd, runsc_cleanup, shown_path,
                    status_text, text_table, why_line, work_env)
import wl_batch
import wl_servers

ZVISOR = common.ZVISOR

# Targets printed for information (nothing fails on them).
ZVISOR_MAX_TIME_RATIO = 1.05        # batch workloads, zvisor run at the median
ZVISOR_MAX_THROUGHPUT_LOSS = 1.10   # servers: native / zvisor throughput
TRACE_FASTER_THAN_STRACE = 10       # zvisor trace -f -o against strace -f -o
TRACE_C_MAX_RATIO = 1.5             # zvisor trace -f -c against native


# ---------------------------------------------------------------------------
# runners

class Runner:
    """One way of running a command; prefix(trace_file) gives the argv prefix."""

    def __init__(self, key, label, prefix, kind):
        self.key = key
        self.label = label
        self.prefix = prefix
        self.kind = kind          # native, zvisor, trace (zvisor trace), strace, gvisor
        self.available = kind == "native"
        self.reason = ""

    def argv(self, cmd, trace_file):
        return self.prefix(trace_file) + cmd

    @property
    def writes_trace(self):
        return self.kind in ("trace", "strace")

    @property
    def host_writes(self):
        """False when the program's files stay inside the runner (gVisor's
        `runsc do` puts a memory overlay over the host's filesystem)."""
        return self.kind != "gvisor"


def runner_specs():
    z = lambda *a: (lambda f: [ZVISOR] + [x.replace("FILE", f) for x in a])
    s = lambda *a: (lambda f: [x.replace("FILE", f) for x in a])
    return [
        Runner("native", "native", lambda f: [], "native"),
        Runner("zvisor", "zvisor run", z("run", "--"), "zvisor"),
        Runner("zvisor-sud", "zvisor run --platform=sud", z("run", "--platform=sud", "--"),
               "zvisor"),
        Runner("zvisor-trace", "zvisor trace -f -o", z("trace", "-f", "-o", "FILE", "--"),
               "trace"),
        Runner("zvisor-trace-c", "zvisor trace -f -c -o",
               z("trace", "-f", "-c", "-o", "FILE", "--"), "trace"),
        Runner("strace", "strace -f -o", s("strace", "-f", "-o", "FILE"), "strace"),
        Runner("strace-c", "strace -f -c -o", s("strace", "-f", "-c", "-o", "FILE"), "strace"),
        Runner("gvisor", "gVisor runsc ptrace", lambda f: [], "gvisor"),
    ]


def probe(runner):
    """None when `/bin/true` runs under runner, else why not."""
    trace = os.path.join(work_env()["TMPDIR"], "probe.trace")
    rc, out, err, _ = run_cmd(runner.argv(["/bin/true"], trace), 60, env=work_env())
    if runner.kind == "gvisor":
        runsc_cleanup()
    if rc is None:
        return "`/bin/true` did not finish within 60 s"
    if rc != 0:
        return f"`/bin/true`: {status_text(rc)}: {why_line(err) or why_line(out) or 'no output'}"
    return None


# Runners only run when --runners names them: strace -c adds about three
# minutes (it is as slow as strace on find and tar) and no target needs it,
# and the whole run must stay under 20 minutes.
ON_REQUEST = {"strace-c"}


def make_runners(args):
    wanted = set(args.runners.split(",")) | {"native"} if args.runners else None
    runners = [r for r in runner_specs() if (r.key in wanted if wanted else r.key not in ON_REQUEST)]
    for r in runners:
        if r.kind in ("zvisor", "trace"):
            r.reason = (f"{ZVISOR} not built (run make)" if not os.access(ZVISOR, os.X_OK)
                        else probe(r))
        elif r.kind == "strace":
            r.reason = ensure_tool("strace", "strace", not args.no_install) or probe(r)
        elif r.kind == "gvisor":
            r.reason = ensure_tool("runsc", "runsc", not args.no_install)
            if not r.reason:
                def try_prefix(prefix):
                    r.prefix = lambda f: prefix
                    return probe(r)
                prefix, _, r.reason = find_runsc_prefix(try_prefix)
                r.prefix = lambda f: prefix or []
        r.available = r.kind == "native" or not r.reason
    return runners


# ---------------------------------------------------------------------------
# measuring

class Cells:
    """Samples and failures per (workload, runner)."""

    def __init__(self, workloads, runners):
        self.samples = {w.key: {r.key: [] for r in runners} for w in workloads}
        self.extra = {w.key: {r.key: [] for r in runners} for w in workloads}
        self.errors = {w.key: {r.key: [] for r in runners} for w in workloads}
        self.timed_out = set()       # (workload, runner): not run again


def measure_in_fresh_dir(w, r, name, args):
    """w.measure under runner r in a new directory RUN (RUN/work: the working
    directory), removed afterwards with whatever gVisor left."""
    run_dir = os.path.join(work_env()["TMPDIR"], name)
    os.makedirs(os.path.join(run_dir, "work"))
    try:
        return w.measure(r, run_dir, args)
    finally:
        if r.kind == "gvisor":
            runsc_cleanup()
        shutil.rmtree(run_dir, ignore_errors=True)


def warm_up(w, native, args):
    """One untimed native run of a batch workload, so that the page cache
    holds what it reads before any runner is timed (the first timed run would
    otherwise pay for everyone)."""
    if not w.higher_is_better:
        _, err, _ = measure_in_fresh_dir(w, native, f"warm-{w.key}", args)
        if err:
            log(f"warm-up run of {w.key} failed natively: {err}")


def run_one(w, r, rep, cells, args):
    """One timed run of workload w under runner r; returns the log text."""
    value, err, extra = measure_in_fresh_dir(w, r, f"run-{w.key}-{r.key}-{rep}", args)
    if value is None:
        cells.errors[w.key][r.key].append(err)
        if err.startswith("timed out"):
            cells.timed_out.add((w.key, r.key))
        return "FAIL"
    cells.samples[w.key][r.key].append(value)
    cells.extra[w.key][r.key].append(extra)
    return w.fmt_value(value)


def run_all(workloads, runners, args):
    active = [r for r in runners if r.available]
    cells = Cells(workloads, active)
    for rep in range(args.reps):
        # Rotate the order each repetition so no runner always follows another.
        order = active[rep % len(active):] + active[:rep % len(active)]
        for w in workloads:
            parts = []
            for r in order:
                if w.skip_reason(r):
                    continue
                if (w.key, r.key) in cells.timed_out:
                    cells.errors[w.key][r.key].append("not run again after timing out")
                    parts.append(f"{r.key}=FAIL")
                    continue
                parts.append(f"{r.key}={run_one(w, r, rep, cells, args)}")
            log(f"[rep {rep + 1}/{args.reps}] {w.key:<14} " + "  ".join(parts))
    return cells


# ---------------------------------------------------------------------------
# results

def medians(cells):
    return {w: {k: (statistics.median(v) if v else None) for k, v in per.items()}
            for w, per in cells.samples.items()}


def ratio_to_native(med, w, key):
    v, base = med[w].get(key), med[w].get("native")
    return v / base if v and base else None


def slowdown(med, w, key):
    """How many times slower than native: the time ratio, or for a
    throughput row native throughput / runner throughput."""
    r = ratio_to_native(med, w.key, key)
    if r is None:
        return None
    return r if not w.higher_is_better else 1 / r


def build_tables(workloads, runners, cells, med):
    """(header, median rows, min-max rows)."""
    active = [r for r in runners if r.available]
    header = ["workload"] + [r.label for r in active]
    rows, spread = [], []
    for w in workloads:
        row, srow = [w.label], [w.label]
        for r in active:
            v, samples = med[w.key].get(r.key), cells.samples[w.key].get(r.key) or []
            if w.skip_reason(r):
                row.append("n/a")
                srow.append("n/a")
            elif v is None:
                row.append("fails")
                srow.append("-")
            else:
                ratio = ratio_to_native(med, w.key, r.key)
                row.append(w.fmt_value(v) + (f" ({fmt_ratio(ratio)})"
                                             if ratio and r.key != "native" else ""))
                srow.append(f"{w.fmt_value(min(samples))}-{w.fmt_value(max(samples))}")
        rows.append(row)
        spread.append(srow)
    return header, rows, spread


def failure_lines(workloads, runners, cells, reps):
    label = {r.key: r.label for r in runners}
    out = []
    for w in workloads:
        for key, errs in cells.errors[w.key].items():
            if errs:
                why = "; ".join(dict.fromkeys(errs))      # distinct reasons, in order
                out.append(f"{w.label} under {label[key]}: {len(errs)}/{reps} runs failed: "
                           f"{why}")
    return out


NOISY_SPREAD = 3.0


def noisy_lines(workloads, runners, cells):
    """Cells whose slowest run took NOISY_SPREAD times the fastest: a stall
    from other work on the machine (disk writeback, the other vCPU busy), to
    be read with the spread table rather than the median alone."""
    out = []
    for w in workloads:
        cells_w = [(r.label, cells.samples[w.key].get(r.key) or []) for r in runners]
        wide = [f"{label} {max(v) / min(v):.1f}x" for label, v in cells_w
                if len(v) > 1 and max(v) / min(v) >= NOISY_SPREAD]
        if wide:
            out.append(f"{w.label}: highest/lowest run " + ", ".join(wide))
    return out


def skip_lines(workloads, runners):
    """The runners workloads leave out, once per reason."""
    out = {}
    for w in workloads:
        for r in runners:
            why = r.available and w.skip_reason(r)
            if why:
                who, where = out.setdefault(why, ([], []))
                who += [r.label] if r.label not in who else []
                where += [w.key] if w.key not in where else []
    return [f"{', '.join(who)} not run on {', '.join(where)}: {why}"
            for why, (who, where) in out.items()]


# ---------------------------------------------------------------------------
# targets (information only)

def evaluate_targets(workloads, keys, med):
    """Entries {target, ok, detail}: zvisor run against native, zvisor trace
    against strace on the syscall-heavy rows, trace -c against native."""
    out = []

    def entry(name, checks, fmt):
        # checks: [(workload label, value or None, ok)]; a missing value fails.
        if checks:
            detail = ", ".join(f"{label} {'fails' if v is None else fmt(v)}"
                               for label, v, _ in checks)
            out.append({"target": name, "ok": all(ok and v is not None
                                                  for _, v, ok in checks),
                        "detail": detail})

    def at_most(key, limit, servers=False):
        """Checks that key's slowdown is at most limit, on the batch or server rows."""
        rows = [w for w in workloads if w.higher_is_better == servers and w.has_native(med)]
        return [(w.label, slowdown(med, w, key), (slowdown(med, w, key) or 99) <= limit)
                for w in rows]

    if "zvisor" in keys:
        entry(f"zvisor run (zpoline) within {ZVISOR_MAX_TIME_RATIO}x of native (time)",
              at_most("zvisor", ZVISOR_MAX_TIME_RATIO), fmt_ratio)
        entry(f"zvisor run (zpoline) throughput within {ZVISOR_MAX_THROUGHPUT_LOSS}x of "
              "native (native/zvisor req/s)",
              at_most("zvisor", ZVISOR_MAX_THROUGHPUT_LOSS, servers=True), fmt_ratio)
    heavy = [w for w in workloads if w.syscall_heavy and w.has_native(med)]
    if {"zvisor-trace", "strace"} <= keys:
        plain, overhead = [], []
        for w in heavy:
            t, s, n = (med[w.key].get(k) for k in ("zvisor-trace", "strace", "native"))
            p = s / t if s and t else None
            o = (s - n) / (t - n) if s and t and t > n else None
            plain.append((w.label, p, (p or 0) >= TRACE_FASTER_THAN_STRACE))
            # zvisor trace no slower than native: infinitely less overhead.
            overhead.append((w.label, o if t is None or t > n else float("inf"),
                             t is not None and (o is None or o >= TRACE_FASTER_THAN_STRACE)))
        entry(f"zvisor trace -f -o >= {TRACE_FASTER_THAN_STRACE}x faster than strace -f -o "
              "on syscall-heavy rows (time ratio strace/trace)", plain, fmt_faster)
        entry(f"zvisor trace -f -o overhead over native >= {TRACE_FASTER_THAN_STRACE}x "
              "smaller than strace -f -o's ((strace-native)/(trace-native))",
              overhead, lambda v: "inf" if v == float("inf") else fmt_ratio(v))
    if "zvisor-trace-c" in keys:
        entry(f"zvisor trace -f -c <= {TRACE_C_MAX_RATIO}x native",
              at_most("zvisor-trace-c", TRACE_C_MAX_RATIO), fmt_ratio)
    return out


def target_lines(targets):
    return [f"{'PASS' if t['ok'] else 'FAIL'}  {t['target']}: {t['detail']}" for t in targets]


# ---------------------------------------------------------------------------
# outputs

TOOLS = [("python3", [wl_batch.PYTHON, "--version"]), ("sqlite3", ["sqlite3", "--version"]),
         ("git", ["git", "--version"]), ("gcc", ["gcc", "--version"]),
         ("go", [wl_batch.go_binary() or "go", "version"]),
         ("redis-server", ["redis-server", "--version"]), ("nginx", ["nginx", "-v"]),
         ("wrk", ["wrk", "-v"])]


def write_outputs(args, workloads, runners, cells, med, targets, meta):
    header, rows, spread = build_tables(workloads, runners, cells, med)
    failures = failure_lines(workloads, runners, cells, args.reps)
    unavailable = [f"{r.label}: {r.reason}" for r in runners if not r.available]
    unavailable += [f"workload {w.label}: {w.reason}" for w in meta["unavailable_workloads"]]
    skips = skip_lines(workloads, runners)
    info = meta["info"]
    title = (f"Median of {args.reps} interleaved runs; (Nx) = ratio to native. Batch rows: "
             "wall-clock seconds, lower is better. Server rows (req/s) name the program run "
             "under the runner, the other side running natively; their ratio is "
             "runner/native throughput, higher is better.")
    print()
    print(title)
    print(text_table(header, rows))
    for line in ([""] + [f"unavailable: {u}" for u in unavailable] if unavailable else []) + \
            ([""] + [f"skipped: {s}" for s in skips] if skips else []) + \
            ([""] + [f"failed: {f}" for f in failures] if failures else []):
        print(line)
    print("\ntargets (information only):")
    for line in target_lines(targets):
        print("  " + line)

    os.makedirs(args.out, exist_ok=True)
    data = {
        "date": meta["when"], "machine": info,
        "settings": {"reps": args.reps, "quick": args.quick,
                     "elapsed_s": round(meta["elapsed"], 1),
                     "loadavg_before": meta["load_before"], "loadavg_after": info["loadavg"]},
        "workloads": [{"key": w.key, "label": w.label, "unit": w.unit,
                       "higher_is_better": w.higher_is_better, "syscall_heavy": w.syscall_heavy,
                       "description": w.description} for w in workloads],
        "unavailable_workloads": {w.key: w.reason for w in meta["unavailable_workloads"]},
        "runners": [{"key": r.key, "label": r.label, "available": r.available,
                     "reason": r.reason or None, "command": r.prefix("FILE") + ["CMD"]}
                    for r in runners],
        "samples": cells.samples, "sample_details": cells.extra,
        "errors": {w: {k: v for k, v in per.items() if v} for w, per in cells.errors.items()},
        "median": med,
        "ratio_to_native": {w.key: {r.key: ratio_to_native(med, w.key, r.key)
                                    for r in runners if r.available} for w in workloads},
        "targets": targets,
    }
    with open(os.path.join(args.out, "workloads.json"), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

    md = ["# zvisor whole-program workloads", "",
          f"{meta['when']}; {info.get('cpu', '?')}, {info.get('cpus')} CPUs, Linux "
          f"{info['kernel']}, {info['glibc']}. Whole run: {meta['elapsed']:.0f} s; load "
          f"average before {meta['load_before']}, after {info['loadavg']} (other work on "
          "the machine shows in the spread below).", "",
          "Versions: " + "; ".join(f"{k}: {info.get(k)}" for k in
                                   ["zvisor", "strace", "runsc"] + [t for t, _ in TOOLS]) + ".",
          "", title, "", markdown_table(header, rows), ""]
    md += ["Workloads:", ""] + [f"- **{w.label}**: {w.description}" for w in workloads] + [""]
    noisy = noisy_lines(workloads, [r for r in runners if r.available], cells)
    for heading, items in (("Unavailable", unavailable), ("Skipped cells (n/a)", skips),
                           ("Failed cells", failures),
                           (f"Noisy cells (slowest run >= {NOISY_SPREAD:g}x the fastest; "
                            "see the spread table)", noisy)):
        if items:
            md += [f"{heading}:", ""] + [f"- {i}" for i in items] + [""]
    md += ["## Targets (information only)", ""] + [f"- {l}" for l in target_lines(targets)]
    heavy = [w.label for w in workloads if w.syscall_heavy]
    md += ["", "Syscall-heavy rows (for the trace target): " + ", ".join(heavy) + "."
           if heavy else "", ""]
    md += ["## Spread across runs (lowest-highest)", "", markdown_table(header, spread), ""]
    with open(os.path.join(args.out, "workloads.md"), "w") as f:
        f.write("\n".join(md))

    outs = ["workloads.json", "workloads.md"]
    why = ensure_matplotlib(not args.no_install)
    if why:
        print(f"\nno PNG: {why}")
    else:
        try:
            write_png(os.path.join(args.out, "workloads.png"), workloads, runners, med)
            outs.append("workloads.png")
        except Exception as e:      # a broken matplotlib must not lose the table
            print(f"\nno PNG: plotting failed: {e}")
    shown = shown_path(args.out)
    print(f"\nwrote {', '.join(os.path.join(shown, o) for o in outs)} "
          f"({meta['elapsed']:.0f} s)")


def write_png(path, workloads, runners, med):
    shown = [w for w in workloads if w.has_native(med)]
    series = []
    for r in runners:
        if r.available and r.key != "native":
            series.append((r.label, ["skip" if w.skip_reason(r) else slowdown(med, w, r.key)
                                     for w in shown]))
    groups = [f"{w.label}\n(native {w.fmt_value(med[w.key]['native'])})" for w in shown]
    plot_ratios(path, groups, series, "slowdown vs native (log scale)",
                "zvisor whole-program workloads: slowdown relative to native, median of "
                "interleaved runs, lower is better\n(batch rows: time / native time; server "
                "rows: native req/s / runner req/s)")


# ---------------------------------------------------------------------------
# main

def all_workloads(args):
    return wl_batch.workloads(args) + wl_servers.workloads(args)


def install_all(allow):
    """Every tool a runner or workload needs (root, apt-get), and matplotlib."""
    need = [("strace", "strace"), ("runsc", "runsc")]
    for w in all_workloads(argparse.Namespace(quick=False)):
        need += [t for t in w.tools if t not in need]
    return [why for why in [ensure_tool(c, p, allow) for c, p in need]
            + [ensure_matplotlib(allow)] if why]


def parse_args():
    names = [w.key for w in all_workloads(argparse.Namespace(quick=False))]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="shorter server runs (wrk 2 s, redis-benchmark -n 20000)")
    ap.add_argument("--only", help="comma-separated workloads: " + ",".join(names))
    ap.add_argument("--runners", help="comma-separated runner keys: " +
                    ",".join(r.key for r in runner_specs()) + " (native always runs)")
    add_common_options(ap, "redis, nginx, wrk, sqlite3, git, gcc, strace and runsc "
                       "(root, apt-get) and matplotlib (pip)")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be positive")
    if args.only and set(args.only.split(",")) - set(names):
        ap.error(f"unknown workload(s) in --only: "
                 f"{', '.join(sorted(set(args.only.split(',')) - set(names)))}")
    return args


def run_main():
    global ZVISOR
    args = parse_args()
    ZVISOR = os.path.abspath(args.zvisor)
    if args.install_deps_only:
        for why in install_all(True):
            log(why)
        return 0      # the runners and workloads report what is missing

    t0 = time.monotonic()
    load_before = loadavg()
    runners = make_runners(args)
    for r in runners:
        log(f"runner {r.label:<24} {'ok' if r.available else 'unavailable: ' + r.reason}")
    workloads, unavailable = [], []
    for w in all_workloads(args):
        if args.only and w.key not in args.only.split(","):
            continue
        w.reason = w.prepare(args)
        (unavailable if w.reason else workloads).append(w)
        log(f"workload {w.key:<14} {'ready' if not w.reason else 'unavailable: ' + w.reason}")
    for w in workloads:
        warm_up(w, runners[0], args)

    cells = run_all(workloads, runners, args)
    med = medians(cells)
    targets = evaluate_targets(workloads, {r.key for r in runners if r.available}, med)
    meta = {"when": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "info": machine_info(ZVISOR, TOOLS), "load_before": load_before,
            "elapsed": time.monotonic() - t0, "unavailable_workloads": unavailable}
    write_outputs(args, workloads, runners, cells, med, targets, meta)
    return 0


if __name__ == "__main__":
    sys.exit(guarded_main(run_main))
