"""Each guest's expected behaviour, read from tests/guests/NAME.desc (the
format is in tests/guests/README.md): the builds it has, the runs it takes
(no argument, or a mode), what each run does natively (exit status or
signal, lines it prints) and where a strict xfail applies. The parser is
the standard library's ast.literal_eval; every problem is a DescError that
names the file, so a bad or missing .desc fails the tests that need it
instead of skipping them."""
import ast
import functools
import os
import signal
from pathlib import Path

import pytest

import zvtest
from zvtest import DEFAULT_TIMEOUT, PLATFORMS, status_text

GUESTS = Path(__file__).resolve().parent / "guests"
# build suffixes the Makefile knows: dynamic glibc PIE, static glibc,
# static-pie glibc, static musl, dynamic non-PIE
VARIANT_NAMES = ["", ".static", ".static-pie", ".musl", ".nopie", ".stripped"]  # .stripped: Go without symbols

# key: (type, required); the type is checked, the meaning in the README
TOP_KEYS = {"about": (str, True), "tests": (list, True), "binary": (str, False),
            "variants": (list, True), "subset": (list, False), "status": ((int, str), False),
            "says": (list, False), "contains": (list, False), "lacks": (list, False),
            "modes": (dict, False), "lists_modes": (bool, False), "may_refuse": (dict, False),
            "xfail": (list, False), "timeout": (int, False)}
MODE_KEYS = {"argv": (list, False), "status": ((int, str), False), "says": (list, False),
             "contains": (list, False)}
XFAIL_KEYS = {"platforms": (list, True), "runs": (list, False), "unless_cpu": (str, False),
              "why": (str, True)}


class DescError(Exception):
    pass


def cpu_has(flag):
    """Whether /proc/cpuinfo lists `flag` (e.g. pku, protection keys)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return flag in line.split(":", 1)[1].split()
    except OSError:
        pass
    return False


def _check_keys(where, table, spec):
    if not isinstance(table, dict):
        raise DescError("%s: expected a dict, got %r" % (where, table))
    for key in table:
        if key not in spec:
            raise DescError("%s: unknown key %r (known: %s)" % (where, key, ", ".join(sorted(spec))))
    for key, (kind, required) in spec.items():
        if key not in table:
            if required:
                raise DescError("%s: missing key %r" % (where, key))
        elif not isinstance(table[key], kind) or (kind is int and isinstance(table[key], bool)):
            raise DescError("%s: %r must be %s, got %r" % (where, key, _kind_name(kind), table[key]))


def _kind_name(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _strings(where, key, value):
    if not all(isinstance(v, str) for v in value):
        raise DescError("%s: %r must hold only strings, got %r" % (where, key, value))
    return list(value)


def _status(where, value):
    """An exit code, or 'SIGNAME' for death by that signal (as subprocess: -N)."""
    if isinstance(value, int):
        if not 0 <= value <= 255:
            raise DescError("%s: exit status %d is not 0..255 (a signal is 'SIGSEGV')" % (where, value))
        return value
    try:
        return -signal.Signals[value].value
    except KeyError:
        raise DescError("%s: status %r is neither an exit code nor a signal name" % (where, value))


class Run:
    """One way the guest is run: without argument (name '') or a mode."""

    def __init__(self, name, argv, status, says, contains, lacks):
        self.name, self.argv, self.status = name, argv, status
        self.says, self.contains, self.lacks = says, contains, lacks

    def check(self, res):
        """Assert that a native Result is what the .desc expects (an
        expect_native for zvtest.compare): the status, none of `lacks`,
        each of `says` as a whole line, each of `contains` anywhere."""
        assert res.returncode == self.status and not any(l in res.stdout for l in self.lacks), (
            "native run itself failed: %s (expected %s%s)\n%s%s"
            % (status_text(res.returncode), status_text(self.status),
               self.lacks and ", without %s" % " or ".join(map(repr, self.lacks)) or "",
               res.stdout[-3000:], res.stderr[-2000:]))
        out = res.stdout.splitlines()
        for l in self.says:
            assert l in out, "native run does not print the line %r:\n%s" % (l, res.stdout[-3000:])
        for s in self.contains:
            assert s in res.stdout, "native run does not print %r:\n%s" % (s, res.stdout[-3000:])


class Desc:
    def __init__(self, name, path, table):
        where = str(path)
        _check_keys(where, table, TOP_KEYS)
        self.name, self.path, self.about = name, path, table["about"]
        self.tests = _strings(where, "tests", table["tests"])
        self.binary = table.get("binary", name)
        self.variants = _strings(where, "variants", table["variants"])
        bad = [v for v in self.variants if v not in VARIANT_NAMES]
        if bad or not self.variants or len(set(self.variants)) != len(self.variants):
            raise DescError("%s: variants %r: each once, from %r" % (where, self.variants, VARIANT_NAMES))
        self.subset = _strings(where, "subset", table.get("subset", self.variants))
        if not set(self.subset) <= set(self.variants):
            raise DescError("%s: subset %r is not among the variants" % (where, self.subset))
        self.timeout = table.get("timeout", DEFAULT_TIMEOUT)
        self.lists_modes = table.get("lists_modes", False)
        self.may_refuse = table.get("may_refuse", {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.may_refuse.items()):
            raise DescError("%s: may_refuse maps section names to errno names" % where)
        status = _status(where, table.get("status", 0))
        lacks = _strings(where, "lacks", table.get("lacks", []))
        self.default = Run("", [], status, _strings(where, "says", table.get("says", [])),
                           _strings(where, "contains", table.get("contains", [])), lacks)
        self.modes = {}
        for mode, spec in table.get("modes", {}).items():
            mwhere = "%s: mode %r" % (where, mode)
            if not isinstance(mode, str) or not mode.strip():
                raise DescError("%s: a mode's name must be a non-empty string" % mwhere)
            _check_keys(mwhere, spec, MODE_KEYS)
            self.modes[mode] = Run(mode, _strings(mwhere, "argv", spec.get("argv", mode.split())),
                                   _status(mwhere, spec.get("status", table.get("status", 0))),
                                   _strings(mwhere, "says", spec.get("says", [])),
                                   _strings(mwhere, "contains", spec.get("contains", [])), lacks)
        self.xfails = []
        for i, x in enumerate(table.get("xfail", [])):
            xwhere = "%s: xfail %d" % (where, i)
            _check_keys(xwhere, x, XFAIL_KEYS)
            bad = [p for p in _strings(xwhere, "platforms", x["platforms"]) if p not in PLATFORMS]
            bad += [r for r in _strings(xwhere, "runs", x.get("runs", []))
                    if r and r not in self.modes]
            if bad:
                raise DescError("%s: no such platform or mode: %r" % (xwhere, bad))
            self.xfails.append(x)

    def builds(self, subset=False, but=()):
        """The built names (tests/guests/build/...), in variant order."""
        return [self.binary + v for v in (self.subset if subset else self.variants) if v not in but]

    def run(self, mode=""):
        return self.modes[mode] if mode else self.default

    def xfail(self, platform, mode=""):
        """Why `mode` (or the run without argument) must fail on
        `platform`, or None."""
        for x in self.xfails:
            if (platform in x["platforms"] and ("runs" not in x or mode in x["runs"])
                    and not ("unless_cpu" in x and cpu_has(x["unless_cpu"]))):
                return x["why"]
        return None

    def param(self, platform, mode, *values, id):
        """A pytest.param of `values`, strictly xfailed where the .desc says."""
        why = self.xfail(platform, mode)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        return pytest.param(*values, marks=marks, id=id)


def sources():
    """Guest names that have a source: NAME.c, NAME.S, or a directory NAME/
    with a go.mod."""
    names = {p.stem for p in GUESTS.glob("*.c")} | {p.stem for p in GUESTS.glob("*.S")}
    return sorted(names | {p.parent.name for p in GUESTS.glob("*/go.mod")})


def parse(path):
    path = Path(path)
    name = path.name[:-len(".desc")]
    try:
        table = ast.literal_eval(path.read_text())
    except (SyntaxError, ValueError) as e:
        raise DescError("%s: not a Python literal: %s" % (path, e))
    if name not in sources():
        raise DescError("%s: no guest source %s.c, %s.S or %s/go.mod" % (path, name, name, name))
    return Desc(name, path, table)


@functools.lru_cache(maxsize=None)
def get(name):
    """The Desc of guest `name` (tests/guests/NAME.desc)."""
    path = GUESTS / (name + ".desc")
    if not path.exists():
        raise DescError("guest %s has no %s" % (name, path))
    return parse(path)


def all_descs():
    return [get(p.name[:-len(".desc")]) for p in sorted(GUESTS.glob("*.desc"))]


def builds(*names, subset=False):
    """The built names of several guests, in order."""
    return [b for n in names for b in get(n).builds(subset)]


def of_build(build):
    """The Desc that a built name (e.g. 'hello.nopie') belongs to."""
    for d in all_descs():
        if build in d.builds():
            return d
    raise DescError("no .desc lists the build %s" % build)


def built(build):
    """The path of a built guest; a guest not built fails the test (make
    check builds them all)."""
    path = zvtest.guest(build)
    if not os.path.exists(path):
        pytest.fail("guest %s is not built: run `make -C tests/guests` (make check builds them)" % build)
    return path


def compare_guest(build, platform, mode="", **kw):
    """zvtest.compare of one run of a built guest (`mode`, or none), its
    native run checked against the .desc; returns (native, zvisor)."""
    d = of_build(build)
    kw.setdefault("expect_native", d.run(mode).check)
    kw.setdefault("timeout", d.timeout)
    return zvtest.compare([built(build)] + d.run(mode).argv, platform, **kw)


def check_native(build, mode=""):
    """Run a built guest natively, assert what its .desc expects; return the Result."""
    d = of_build(build)
    res = zvtest.run_native([built(build)] + d.run(mode).argv, timeout=d.timeout)
    d.run(mode).check(res)
    return res
