"""make install / make uninstall, with PREFIX and DESTDIR as users of a C
tool expect: the binary and the man page, nothing else."""
import os
import subprocess

from zvtest import REPO, guest, run


def make(*args):
    return subprocess.run(["make", "-s", "-C", str(REPO)] + list(args), capture_output=True, text=True)


def test_install_and_uninstall(tmp_path):
    dest = tmp_path / "stage"
    r = make("install", "DESTDIR=%s" % dest, "PREFIX=/opt/zv")
    assert r.returncode == 0, r.stderr
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == ["opt/zv/bin/zvisor", "opt/zv/share/man/man1/zvisor.1"], files
    binary = dest / "opt/zv/bin/zvisor"
    assert os.access(binary, os.X_OK)
    res = run([binary, "run", "--", guest("hello")])
    assert res.returncode == 0 and res.stdout == run([guest("hello")]).stdout, res
    man = subprocess.run(["man", "-l", str(dest / "opt/zv/share/man/man1/zvisor.1")],
                         capture_output=True, text=True, env=dict(os.environ, MANPAGER="cat"))
    assert man.returncode != 0 or "zvisor" in man.stdout
    r = make("uninstall", "DESTDIR=%s" % dest, "PREFIX=/opt/zv")
    assert r.returncode == 0, r.stderr
    assert not [p for p in dest.rglob("*") if p.is_file()]
