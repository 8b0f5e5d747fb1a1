"""zvisor proot's command line: PRoot's options turned into zvisor run's
(-v 1 prints the command line they become), PRoot's parsing rules (the
last -r/-w/-i counts, values after '=' for long options, the first word
without '-' ends them, /bin/sh by default), and bad or refused options: one
line 'zvisor: proot: ...' on stderr and exit 2. The runs themselves are
tests/test_rootfs_proot.py's."""
import os
import re

import pytest

from zvtest import ZVISOR, run

ZV = str(ZVISOR)
HOST_CWD = "/usr"


def translated(args, env=None):
    """The zvisor run command line that zvisor proot ARGS stands for: -v 1
    prints it before running; the run is made to stop at once (a --root
    that does not exist)."""
    res = run([ZV, "proot", "-v", "1"] + args, env=env, cwd=HOST_CWD)
    first = res.stderr.splitlines()[0] if res.stderr else ""
    assert first.startswith("zvisor: proot: "), res
    return first[len("zvisor: proot: "):].split()[1:]  # without zvisor's own path


NOPE = "/nonexistent-root"
ROOT = ["run", "--root", NOPE, "--no-default-binds"]
CWD = ["--cwd", HOST_CWD]  # PRoot's default: the host's working directory's path, in the guest


@pytest.mark.parametrize("args,expect", [
    (["-r", NOPE, "true"], ROOT + CWD + ["--", "true"]),
    (["--rootfs=" + NOPE, "ls", "-l"], ROOT + CWD + ["--", "ls", "-l"]),
    (["-r", "/etc", "-r", NOPE], ROOT + CWD + ["--", "/bin/sh"]),
    (["-r", NOPE, "-b", "/proc", "-b", "/tmp:/t", "-m", "lib:/x", "--bind=/etc:/b", "--mount=/usr/share", "-b",
      "/var:/e!", "-b", "/etc/hostname:rel", "id"],
     ROOT + ["--bind", "/proc", "--bind", "/tmp:/t", "--bind", HOST_CWD + "/lib:/x", "--bind", "/etc:/b",
             "--bind", "/usr/share", "--bind", "/var:/e", "--bind", "/etc/hostname:" + HOST_CWD + "/rel"] + CWD +
     ["--", "id"]),
    (["-r", NOPE, "-w", "/root", "-w", "sub", "pwd"], ROOT + ["--cwd", HOST_CWD + "/sub", "--", "pwd"]),
    (["-r", NOPE, "--cwd=/a", "pwd"], ROOT + ["--cwd", "/a", "--", "pwd"]),
    (["-r", NOPE, "--pwd=.", "pwd"], ROOT + ["--cwd", HOST_CWD, "--", "pwd"]),
    (["-r", NOPE, "-0", "id"], ROOT + CWD + ["--fake-root", "--", "id"]),
    (["-r", NOPE, "--root-id", "-i", "12:34", "id"], ROOT + CWD + ["--ids", "12:34", "--", "id"]),
    (["-r", NOPE, "--change-id=5:6", "-0", "id"], ROOT + CWD + ["--fake-root", "--", "id"]),
    (["-R", NOPE, "id"], ROOT + ["--bind-preset=host"] + CWD + ["--", "id"]),
    (["-S", NOPE], ROOT + ["--bind-preset=build"] + CWD + ["--fake-root", "--", "/bin/sh"]),
    (["-S", NOPE, "-i", "1:2", "x"], ROOT + ["--bind-preset=build"] + CWD + ["--ids", "1:2", "--", "x"]),
    (["-r", NOPE, "--kill-on-exit", "-l", "--link2symlink", "--mixed-mode", "no", "-v", "-1", "-v", "2", "x"],
     ROOT + CWD + ["--kill-on-exit", "--", "x"]),
    (["-r", NOPE, "-k", "6.1.0", "--kernel-release=2.6.32-zv", "x"],
     ROOT + CWD + ["--kernel-release=2.6.32-zv", "--", "x"]),
    (["--platform=sud", "--count", "-r", NOPE, "x"],
     ["run", "--platform=sud", "--count"] + ROOT[1:] + CWD + ["--", "x"]),
    (["-r", NOPE, "--", "-x", "-r"], ROOT + CWD + ["--", "-x", "-r"]),
    (["-r", NOPE, "sh", "-r", "y"], ROOT + CWD + ["--", "sh", "-r", "y"]),
    (["-b", "/etc:/x", "ls"], ["run", "--root", "/", "--no-default-binds", "--bind", "/etc:/x"] + CWD +
     ["--", "ls"]),
    (["-0", "id"], ["run", "--fake-root", "--", "id"]),
    (["-w", "/tmp", "pwd"], ["run", "--cwd", "/tmp", "--", "pwd"]),
], ids=["r", "rootfs", "last-r", "binds", "last-w", "cwd", "pwd-dot", "root-id", "last-id", "last-id0",
        "R", "S", "S-i", "accepted", "kernel-release", "run-options", "dashdash", "command-args", "bind-no-r",
        "no-r", "w-no-r"])
def test_translation(args, expect):
    assert translated(args) == expect


def test_bind_host_paths_as_proot_reads_them():
    """-b HOST: $NAME is that variable's value; a HOST that cannot be reached
    is left out with one warning line (none under -v -1), as PRoot goes on
    without it."""
    env = dict(os.environ, ZVBINDDIR="/etc")
    assert translated(["-r", NOPE, "-b", "$ZVBINDDIR:/x", "-b", "$ZVBINDDIR", "x"], env=env) == (
        ROOT + ["--bind", "/etc:/x", "--bind", "/etc"] + CWD + ["--", "x"])
    res = run([ZV, "proot", "-b", "/zv-missing:/x", "-b", "/etc:/y", "sh", "-c",
               "cat /y/hostname >/dev/null; echo ran"])
    assert res.stdout == "ran\n" and res.returncode == 0, res
    assert re.fullmatch(r"zvisor: proot: warning: binding '/zv-missing:/x' left out: /zv-missing: .*\n",
                        res.stderr), res
    res = run([ZV, "proot", "-v", "-1", "-b", "/zv-missing", "true"])
    assert (res.stderr, res.returncode) == ("", 0), res


def test_kernel_release():
    """-k STRING: uname's release, in the program and what it runs."""
    res = run([ZV, "proot", "-k", "6.1.0-zv", "sh", "-c", "uname -r; exec uname -r"])
    assert (res.stdout, res.returncode) == ("6.1.0-zv\n6.1.0-zv\n", 0), res
    res = run([ZV, "run", "--kernel-release=2.6.32", "--", "uname", "-r"])
    assert (res.stdout, res.returncode) == ("2.6.32\n", 0), res
    for bad in ("", "a,b", "x" * 65):
        res = run([ZV, "run", "--kernel-release=" + bad, "--", "true"])
        assert res.returncode == 2 and "--kernel-release" in res.stderr, res


def test_proot_runs_the_command():
    """Without -r: the host's root, as PRoot; the program's status is
    zvisor's."""
    res = run([ZV, "proot", "sh", "-c", "echo hi; exit 3"])
    assert (res.stdout, res.returncode) == ("hi\n", 3), res


def one_line(res, pattern):
    assert res.stdout == "", res
    assert res.returncode == 2, res
    assert re.fullmatch(r"zvisor: proot: %s\n" % pattern, res.stderr), res.stderr


@pytest.mark.parametrize("args,pattern", [
    (["-q", "qemu-arm", "true"], r"-q: not supported: .*emulator.*"),
    (["--qemu=qemu-arm", "true"], r"--qemu: not supported: .*"),
    (["-p", "80:8080", "true"], r"-p: not supported: .*ports.*"),
    (["-n", "true"], r"-n: not supported: .*ports.*"),
    (["-P", "x.py", "true"], r"-P: not supported: .*Python.*"),
    (["-z", "true"], r"unknown option '-z' .*"),
    (["--rootfs", "/x", "true"], r"option '--rootfs' takes its value after '=': --rootfs=VALUE"),
    (["-r"], r"missing value for option '-r'"),
    (["-rfoo", "true"], r"unknown option '-rfoo' .*"),
    (["-i", "1", "true"], r"option '-i' expects UID:GID, not '1'"),
    (["-i", "a:b", "true"], r"option '-i' expects UID:GID, not 'a:b'"),
    (["-v", "x", "true"], r"option '-v' expects an integer value, not 'x'"),
    ([], r"no option and no command: .*"),
])
def test_bad_options(args, pattern):
    one_line(run([ZV, "proot"] + args), pattern)


def test_help_and_version():
    for opt in ("-h", "--help", "--usage"):
        res = run([ZV, "proot", opt])
        assert res.returncode == 0 and res.stderr == "", res
        for word in ("-r DIR", "-b PATH", "-w DIR", "-0", "-i UID:GID", "-R DIR", "-S DIR", "--kill-on-exit",
                     "-k STRING"):
            assert word in res.stdout, "zvisor proot --help lacks %s" % word
    for opt in ("-V", "--version", "--about"):
        res = run([ZV, "proot", opt])
        assert res.returncode == 0 and re.match(r"zvisor \d+\.\d+", res.stdout), res
    assert "proot" in run([ZV, "--help"]).stdout


def test_default_command_is_the_guests_sh():
    """No command: /bin/sh (here the host's, without -r), reading stdin."""
    res = run([ZV, "proot", "--"], input="echo from sh; exit 4\n")
    assert (res.stdout, res.returncode) == ("from sh\n", 4), res


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


# each sleep's output away from the pipe the test reads to its end
KILL_SCRIPT = ("sleep 60 >/dev/null 2>&1 & echo $!; "
               "setsid sh -c 'sleep 61 >/dev/null 2>&1 & echo $!' & wait $!; "
               "(sh -c 'sleep 62 >/dev/null 2>&1 & echo $!' &); sleep 0.2; exit 7")


@pytest.mark.parametrize("platform", ["stubs", "sud", "seccomp"])
@pytest.mark.parametrize("how", [["proot", "--kill-on-exit"], ["run", "--kill-on-exit", "--"], ["proot"]])
def test_kill_on_exit(how, platform):
    """The run's processes left when the program exits (a child, one in a
    session of its own, an orphan) are killed with --kill-on-exit, and left
    running without it, as natively."""
    import time
    cmd = [ZV, how[0], "--platform=" + platform] + how[1:] + ["sh", "-c", KILL_SCRIPT]
    res = run(cmd)
    pids = [int(p) for p in res.stdout.split()]
    try:
        assert res.returncode == 7 and len(pids) == 3, res
        time.sleep(0.5)
        alive = [p for p in pids if _alive(p)]
        assert alive == ([] if "--kill-on-exit" in how else pids), (how, pids, alive)
    finally:
        for p in pids:
            try:
                os.kill(p, 9)
            except ProcessLookupError:
                pass
