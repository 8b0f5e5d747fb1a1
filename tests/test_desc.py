"""The guests' .desc files (tests/guests/README.md) against what exists:
every guest source has a valid .desc and every .desc a source; the builds
the descs name are exactly what tests/guests/Makefile builds; and the
loader refuses what it must (unknown keys, bad statuses, unknown modes).
None of this runs zvisor or a guest."""
import re
import subprocess
from pathlib import Path

import pytest

import guestdesc
from guestdesc import GUESTS, DescError

pytestmark = pytest.mark.native_only

NAMES = sorted(set(guestdesc.sources()) | {p.name[:-len(".desc")] for p in GUESTS.glob("*.desc")})


@pytest.mark.parametrize("name", NAMES)
def test_desc_is_valid(name):
    """A guest source without a .desc, a .desc without a source, an
    unknown key or a bad value fails here, with the file named."""
    try:
        guestdesc.get(name)
    except DescError as e:
        pytest.fail(str(e))


def makefile_targets():
    """The names `make -C tests/guests` builds (its TARGETS, as make expands them)."""
    out = subprocess.run(["make", "-pnq", "-C", str(GUESTS)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    found = re.search(r"^TARGETS := (.*)$", out, re.M)
    assert found, "no TARGETS in `make -pnq -C tests/guests`"
    return sorted(t[len("build/"):] for t in found.group(1).split())


def test_builds_match_makefile():
    described = sorted(b for d in guestdesc.all_descs() for b in d.builds())
    targets = makefile_targets()
    assert described == targets, ("built but in no .desc: %s; in a .desc but not built: %s"
                                  % (sorted(set(targets) - set(described)),
                                     sorted(set(described) - set(targets))))


@pytest.mark.parametrize("name", NAMES)
def test_listed_tests_run_the_guest(name):
    """Each file a .desc names under 'tests' exists and mentions the guest."""
    d = guestdesc.get(name)
    for f in d.tests:
        path = Path(__file__).parent / f
        assert path.is_file(), "%s names %s, which does not exist" % (d.path, f)
        assert re.search(r"[\"']%s[\"'.]" % re.escape(d.binary), path.read_text()), (
            "%s names %s, which never mentions %r" % (d.path, f, d.binary))


# --- the loader refuses bad descs ---------------------------------------------------

GOOD = "{'about': 'x', 'tests': ['test_guests.py'], 'variants': [''], %s}"


@pytest.mark.parametrize("body,error", [
    ("'exits': 3", "unknown key 'exits'"),
    ("'status': 'SIGNOPE'", "neither an exit code nor a signal name"),
    ("'status': -11", "is not 0..255"),
    ("'variants': ['.dynamic']", "variants"),
    ("'subset': ['.static']", "not among the variants"),
    ("'modes': {'a': {'stauts': 1}}", "mode 'a': unknown key 'stauts'"),
    ("'modes': {'a': {'says': 'one line'}}", "'says' must be list"),
    ("'xfail': [{'platforms': ['zpoline'], 'runs': ['b'], 'why': 'w'}]", "no such platform or mode"),
    ("'xfail': [{'platforms': ['zpoline']}]", "missing key 'why'"),
    ("'lists_modes': 1", "must be bool"),
])
def test_loader_refuses(tmp_path, body, error):
    table = GOOD % body
    if body.startswith("'variants'"):
        table = table.replace("'variants': [''], ", "")
    path = tmp_path / "hello.desc"
    path.write_text(table)
    with pytest.raises(DescError, match=re.escape(error)):
        guestdesc.parse(path)


def test_loader_refuses_desc_without_source(tmp_path):
    path = tmp_path / "nosuchguest.desc"
    path.write_text(GOOD % "")
    with pytest.raises(DescError, match="no guest source"):
        guestdesc.parse(path)


def test_loader_reads_a_good_desc(tmp_path):
    path = tmp_path / "hello.desc"
    path.write_text(GOOD % """'status': 4, 'modes': {'a b': {}, 'c': {'status': 'SIGSEGV'}},
        'xfail': [{'platforms': ['sud'], 'runs': ['c'], 'why': 'because'}]""")
    d = guestdesc.parse(path)
    assert [d.run(m).argv for m in ("", "a b", "c")] == [[], ["a", "b"], ["c"]]
    assert [d.run(m).status for m in ("", "a b", "c")] == [4, 4, -11]
    assert d.xfail("sud", "c") == "because" and d.xfail("sud", "a b") is None
    assert d.xfail("seccomp", "c") is None
