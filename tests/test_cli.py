"""The command line and bad input: --help/--version, usage errors (exit 2),
programs that cannot be run (127 / 126 with one line on stderr), a fuzzed
loader (10,000 mutated ELF headers: a one-line error and 126, or the native
behaviour, never a crash), and nothing of zvisor's own on the guest's
stdout."""
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from zvtest import (PLATFORMS, platform_opts, ZVISOR, compare, guest, native_ok, run, run_native, run_zv,
                    status_text)

ZV = str(ZVISOR)


def one_line_error(res, path, code):
    """zvisor refused to run `path`: exit `code`, nothing on stdout, exactly
    one line 'zvisor: PATH: reason' on stderr."""
    assert res.stdout == "", "zvisor wrote to the guest's stdout: %r" % res.stdout
    assert res.returncode == code, "expected exit %d, got %s; stderr %r" % (
        code, status_text(res.returncode), res.stderr)
    assert re.fullmatch(r"zvisor: %s: [^\n]+\n" % re.escape(path), res.stderr), \
        "expected one line 'zvisor: %s: <reason>', got %r" % (path, res.stderr)


# --- help, version, usage ---------------------------------------------------

def test_help():
    res = run([ZV, "--help"])
    assert res.returncode == 0, res
    assert "run" in res.stdout and "--version" in res.stdout


def test_run_help():
    res = run([ZV, "run", "--help"])
    assert res.returncode == 0, res
    for word in ("--platform", "sud", "seccomp", "--count"):
        assert word in res.stdout, "run --help does not mention %s:\n%s" % (word, res.stdout)


def test_version():
    res = run([ZV, "--version"])
    assert res.returncode == 0, res
    assert re.match(r"zvisor \d+\.\d+", res.stdout), res.stdout


@pytest.mark.parametrize("argv", [
    ["--bogus"],
    ["frobnicate"],
    [],
    ["run", "--bogus", "--", "/bin/true"],
    ["run", "--platform=nope", "--", "/bin/true"],
    ["run", "--platform", "--", "/bin/true"],
    ["run"],
    ["run", "--"],
], ids=lambda a: " ".join(a) or "no-arguments")
def test_usage_error(argv):
    res = run([ZV] + argv)
    assert res.returncode == 2, "%s: %s" % (argv, status_text(res.returncode))
    assert res.stdout == "", "usage errors go to stderr, got stdout %r" % res.stdout
    assert "usage" in res.stderr.lower(), res.stderr


@pytest.mark.parametrize("platform", PLATFORMS + [None])
def test_platform_option(platform):
    """Both platforms and the default run a program; `run PROGRAM` without
    `--` works too."""
    compare(["/bin/echo", "platform", "ok"], platform, expect_native=native_ok(0))
    res = run([ZV, "run", "/bin/echo", "no", "dashes"])
    assert (res.stdout, res.returncode) == ("no dashes\n", 0), res


# --- programs that cannot be run ----------------------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
def test_missing_file(platform):
    res = run_zv(["/nonexistent"], platform)
    assert res.returncode == 127, status_text(res.returncode)
    assert res.stdout == ""
    assert res.stderr == "zvisor: /nonexistent: No such file or directory\n"


def test_missing_command_in_path():
    res = run([ZV, "run", "--", "zv-no-such-command"])
    one_line_error(res, "zv-no-such-command", 127)


@pytest.fixture
def files(tmp_path):
    """Small files that cannot be run, keyed by case."""
    d = tmp_path
    hello = guest("hello.static")
    made = {}

    def add(name, data, mode=0o755):
        p = d / name
        p.write_bytes(data)
        p.chmod(mode)
        made[name] = str(p)

    add("text", b"echo this is not a program\n")
    add("empty", b"")
    add("binary-junk", bytes(range(256)) * 4)
    add("elf-i386", elf_i386())
    add("elf-aarch64", elf_foreign(183))
    add("elf64-machine-i386", elf_foreign(3))
    add("elf-header-only", tiny_elf()[:64])
    add("elf-truncated-10", tiny_elf()[:10])
    add("elf-magic-only", b"\x7fELF")
    add("elf-relocatable", tiny_elf(e_type=1))
    add("elf-core", tiny_elf(e_type=4))
    add("elf-no-phdrs", tiny_elf(phnum=0))
    add("elf-phentsize", tiny_elf(phentsize=32))
    add("elf-phoff-past-end", tiny_elf(phoff=1 << 20))
    add("elf-interp-missing", elf_with_interp(b"/nonexistent/ld.so\0"))
    add("elf-interp-unterminated", elf_with_interp(b"/lib64/ld-linux-x86-64.so.2"))
    if os.path.exists(hello):
        data = open(hello, "rb").read()
        add("hello-noexec", data, 0o644)
        add("hello-truncated-4k", data[:4096])
        add("hello-truncated-200", data[:200])
    os.mkdir(d / "directory")
    made["directory"] = str(d / "directory")
    return made


# zvisor must exit 126 with one line for all of them; the host's execve
# refuses all but the two in HOST_RUNS (it runs i386 code, and maps a
# truncated file only to die with SIGSEGV after the point of no return)
CANNOT_RUN = ["text", "empty", "binary-junk", "elf-i386", "elf-aarch64", "elf64-machine-i386",
              "elf-header-only", "elf-truncated-10", "elf-magic-only",
              "elf-relocatable", "elf-core", "elf-no-phdrs", "elf-phentsize",
              "elf-phoff-past-end", "elf-interp-unterminated", "hello-noexec",
              "hello-truncated-4k", "hello-truncated-200", "directory"]
HOST_RUNS = {"elf-i386", "hello-truncated-4k"}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("case", CANNOT_RUN)
def test_cannot_run(files, case, platform):
    path = files.get(case)
    if path is None:
        pytest.fail("needs tests/guests/build/hello.static: run `make -C tests/guests`")
    one_line_error(run_zv([path], platform), path, 126)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_missing_interpreter(files, platform):
    """An ELF whose PT_INTERP does not exist: like a shell, 127 (the host's
    execve says ENOENT)."""
    path = files["elf-interp-missing"]
    with pytest.raises(FileNotFoundError):
        subprocess.run([path])
    one_line_error(run_zv([path], platform), path, 127)


@pytest.mark.native_only
def test_native_cannot_run(files):
    """The host's execve also refuses the CANNOT_RUN files (so the crafted
    files are what their names say), and runs the crafted good ones."""
    for case in CANNOT_RUN:
        if case in HOST_RUNS or case not in files:
            continue
        with pytest.raises(OSError):
            subprocess.run([files[case]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert run_native([files["elf-i386"]]).stdout in ("i386\n", "")
    res = run_native([write_tmp(files, "tiny", tiny_elf())])
    assert (res.stdout, res.returncode) == ("tiny\n", 0), res


def write_tmp(files, name, data):
    path = os.path.join(os.path.dirname(files["text"]), name)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o755)
    return path


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tiny_elf_runs(files, platform):
    """The hand-made ELF the fuzzer mutates runs under zvisor."""
    compare([write_tmp(files, "tiny", tiny_elf())], platform, expect_native=native_ok(0))


# --- exit status, signals, stdout cleanliness ----------------------------------

@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("script,code", [
    ("exit 0", 0), ("exit 1", 1), ("exit 42", 42), ("exit 255", 255),
    ("kill -TERM $$", -15), ("kill -KILL $$", -9), ("kill -SEGV $$", -11),
    ("kill -USR1 $$", -10), ("kill -SYS $$", -31), ("kill -PIPE $$", -13),
])
def test_exit_status_and_signal(script, code, platform):
    compare(["/bin/sh", "-c", script], platform, expect_native=native_ok(code))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGHUP])
def test_killed_from_outside(sig, platform):
    """A signal sent to the process (guest and kernel share it) kills it with
    that signal, as natively."""
    # A runner started by nohup or `&` ignores SIGHUP or SIGINT, and the
    # guest would inherit that: start from the default dispositions.
    p = subprocess.Popen([ZV, "run", *platform_opts(platform), "--", "sleep", "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: sig != signal.SIGKILL and signal.signal(sig, signal.SIG_DFL))
    time.sleep(0.5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert p.returncode == -sig, "%s: %s, stderr %r" % (sig.name, status_text(p.returncode), err)
    assert out == b"" and err == b""


@pytest.mark.parametrize("platform", PLATFORMS)
def test_same_pid(platform):
    """The guest runs in zvisor's own process: $$ is the pid we started."""
    p = subprocess.Popen([ZV, "run", *platform_opts(platform), "--", "/bin/sh", "-c", "echo $$"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=60)
    assert out.decode().strip() == str(p.pid), (out, err)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_stdin_stdout_stderr_cwd(tmp_path, platform):
    compare(["/bin/sh", "-c", "cat; pwd; echo to-stderr >&2; ls"], platform, input="from stdin\n",
            cwd=str(tmp_path), expect_native=native_ok(0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_nothing_on_stdout(platform):
    """With --count, and when the guest fails or dies, zvisor's own output
    goes to stderr only."""
    for argv in (["/bin/true"], ["/bin/false"], ["/bin/sh", "-c", "kill -SEGV $$"]):
        for opts in ([], ["--count"]):
            res = run_zv(argv, platform, opts)
            assert res.stdout == "", "%s %s: stdout %r" % (opts, argv, res.stdout)


# --- crafted ELF files ---------------------------------------------------------

BASE = 0x400000


def tiny_elf(e_type=2, machine=62, phnum=1, phentsize=56, phoff=64, entry=None, data=1):
    """A minimal static x86-64 ELF: write(1, "tiny\\n", 5); exit(0)."""
    msg = b"tiny\n"
    code_off = 64 + 56
    code = (b"\xb8\x01\x00\x00\x00"          # mov $1, %eax
            b"\xbf\x01\x00\x00\x00"          # mov $1, %edi
            b"\x48\x8d\x35" + b"XXXX"        # lea msg(%rip), %rsi
            + b"\xba" + struct.pack("<I", len(msg))  # mov $5, %edx
            + b"\x0f\x05"                    # syscall
            b"\xb8\x3c\x00\x00\x00"          # mov $60, %eax
            b"\x31\xff"                      # xor %edi, %edi
            b"\x0f\x05")                     # syscall
    lea_end = 5 + 5 + 7
    code = code.replace(b"XXXX", struct.pack("<i", len(code) - lea_end))
    body = code + msg
    size = code_off + len(body)
    if entry is None:
        entry = BASE + code_off
    ident = b"\x7fELF" + bytes([2, data, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", e_type, machine, 1, entry, phoff, 0, 0, 64,
                               phentsize, phnum, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, size, size, 0x1000)
    return ehdr + phdr + body


def elf_foreign(machine):
    return tiny_elf(machine=machine)


def elf_with_interp(path):
    """tiny_elf plus a PT_INTERP naming `path`."""
    code_elf = tiny_elf()
    body = code_elf[64 + 56:]
    phoff = 64
    code_off = 64 + 2 * 56
    interp_off = code_off + len(body)
    size = interp_off + len(path)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, BASE + code_off, phoff, 0, 0, 64, 56,
                               2, 64, 0, 0)
    interp = struct.pack("<IIQQQQQQ", 3, 4, interp_off, BASE + interp_off, BASE + interp_off,
                         len(path), len(path), 1)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, size, size, 0x1000)
    return ehdr + interp + load + body + path


def elf_i386():
    """A runnable 32-bit ELF: write(1, "i386\\n", 5) and exit(0) via int $0x80."""
    msg = b"i386\n"
    base = 0x08048000
    code_off = 52 + 32
    code_len = 5 + 5 + 5 + 5 + 2 + 5 + 2 + 2
    msg_addr = base + code_off + code_len
    code = (b"\xb8\x04\x00\x00\x00" + b"\xbb\x01\x00\x00\x00"
            + b"\xb9" + struct.pack("<I", msg_addr) + b"\xba\x05\x00\x00\x00" + b"\xcd\x80"
            + b"\xb8\x01\x00\x00\x00" + b"\x31\xdb" + b"\xcd\x80")
    assert len(code) == code_len
    size = code_off + len(code) + len(msg)
    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, base + code_off, 52, 0, 0, 52, 32, 1,
                               40, 0, 0)
    phdr = struct.pack("<IIIIIIII", 1, 0, base, base, size, size, 5, 0x1000)
    return ehdr + phdr + code + msg


# --- loader fuzzing -------------------------------------------------------------

FUZZ_COUNT = 10000
FUZZ_SEED = 20240601

# (offset, size) of the ELF64 header fields, and of each program header's
EHDR_FIELDS = [(4, 1), (5, 1), (6, 1), (7, 1), (8, 1), (16, 2), (18, 2), (20, 4), (24, 8),
               (32, 8), (40, 8), (48, 4), (52, 2), (54, 2), (56, 2), (58, 2), (60, 2), (62, 2)]
PHDR_FIELDS = [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (40, 8), (48, 8)]


def interesting(size, filesize, rng):
    top = (1 << (8 * size)) - 1
    vals = [0, 1, 2, 3, 4, 7, 0x10, 0x38, 0x40, 0xff, 0x1000, 0xfff, top, top >> 1,
            (top >> 1) + 1, filesize, filesize - 1, filesize + 1, filesize * 2,
            rng.randrange(top + 1)]
    if size == 8:
        vals += [0x7ffffffff000, 0x800000000000, 0xffffffffff600000, 1 << 40, 0x400000,
                 0x1000000000]
    return rng.choice([v & top for v in vals])


def mutate(base, rng):
    """One mutant of `base` and a short description of the mutation."""
    data = bytearray(base)
    phoff, = struct.unpack_from("<Q", base, 32)
    phnum, = struct.unpack_from("<H", base, 56)
    hdr_end = min(len(base), max(64, phoff + 56 * phnum))
    kind = rng.random()
    if kind < 0.06:
        n = rng.randrange(0, len(base))
        return bytes(data[:n]), "truncated to %d bytes" % n
    if kind < 0.45:
        changes = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.4 or phnum == 0:
                off, size = rng.choice(EHDR_FIELDS)
            else:
                i = rng.randrange(phnum)
                f, size = rng.choice(PHDR_FIELDS)
                off = phoff + 56 * i + f
            if off + size > len(data):
                continue
            v = interesting(size, len(base), rng)
            data[off:off + size] = v.to_bytes(size, "little")
            changes.append("%#x/%d=%#x" % (off, size, v))
        return bytes(data), "fields " + " ".join(changes)
    if kind < 0.55 and phnum > 1:
        # p_type shuffles: duplicate/retag program headers
        i, j = rng.randrange(phnum), rng.randrange(phnum)
        a = phoff + 56 * i
        b = phoff + 56 * j
        if rng.random() < 0.5:
            data[a:a + 56] = base[b:b + 56]
            return bytes(data), "phdr %d := phdr %d" % (i, j)
        t = rng.choice([1, 2, 3, 4, 6, 7, 0x6474e550, 0x6474e551, 0x6474e552, 0x6474e553])
        data[a:a + 4] = struct.pack("<I", t)
        return bytes(data), "phdr %d type %#x" % (i, t)
    changes = []
    for _ in range(rng.randint(1, 8)):
        off = rng.randrange(hdr_end)
        data[off] = rng.randrange(256)
        changes.append("%#x=%#x" % (off, data[off]))
    return bytes(data), "bytes " + " ".join(changes)


def fuzz_bases():
    bases = [("tiny", tiny_elf())]
    for name in ("asmhello", "hello.static", "hello.static-pie", "hello", "hello.musl"):
        path = guest(name)
        if os.path.exists(path):
            bases.append((name, open(path, "rb").read()))
    return bases


def check_mutant(path, desc):
    """None if zvisor behaved, else a description of the failure. The loader
    is the same on every platform; sud is used because corrupt headers make
    some programs read near address 0, which faults natively but reads
    zpoline's page-0 trampoline on CPUs without protection keys (a documented
    difference, tested in test_fastpath.py)."""
    try:
        zv = run([ZV, "run", "--platform=sud", "--", path], timeout=20)
    except AssertionError as e:
        return "%s: zvisor hung: %s" % (desc, str(e).splitlines()[0])
    if zv.returncode in (126, 127) and zv.stdout == "" and \
            re.fullmatch(r"zvisor: %s: [^\n]+\n" % re.escape(path), zv.stderr):
        return None
    # zvisor ran it (or misbehaved): only the native behaviour is acceptable
    try:
        native = run([path], timeout=20)
    except OSError as e:
        return "%s: the host refuses it (%s) but zvisor gave %s, stdout %r, stderr %r" % (
            desc, e.strerror, status_text(zv.returncode), zv.stdout[:200], zv.stderr[:300])
    except AssertionError:
        native = None
    if native is None or native != zv:
        return "%s: native %s %r, zvisor %s %r %r" % (
            desc, native and status_text(native.returncode), native and native.stdout[:100],
            status_text(zv.returncode), zv.stdout[:100], zv.stderr[:300])
    return None


def test_fuzz_loader(tmp_path):
    """10,000 mutated ELF headers (fields set to boundary values, random
    bytes, retagged program headers, truncations) of a hand-made ELF and of
    the hello guests: zvisor gives one line and 126 (or 127 for a missing
    interpreter), or does exactly what the host does with the file; it never
    crashes or hangs."""
    rng = random.Random(FUZZ_SEED)
    bases = fuzz_bases()
    failures = []
    done = 0
    batch = 400
    workers = max(2, 2 * (os.cpu_count() or 1))
    n = 0
    while n < FUZZ_COUNT:
        d = tmp_path / ("b%d" % n)
        d.mkdir()
        jobs = []
        for i in range(min(batch, FUZZ_COUNT - n)):
            name, base = bases[(n + i) % len(bases)]
            data, desc = mutate(base, rng)
            while data == base:
                data, desc = mutate(base, rng)
            path = str(d / ("m%05d" % (n + i)))
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o755)
            jobs.append((path, "#%d %s %s" % (n + i, name, desc)))
        # all files of the batch are written and closed before any exec, so
        # no child can inherit one open for writing (ETXTBSY)
        with ThreadPoolExecutor(workers) as ex:
            for res in ex.map(lambda j: check_mutant(*j), jobs):
                done += 1
                if res:
                    failures.append(res)
        shutil.rmtree(d, ignore_errors=True)
        n += len(jobs)
    assert done == FUZZ_COUNT
    assert not failures, "%d of %d mutants misbehaved; first ones:\n%s" % (
        len(failures), FUZZ_COUNT, "\n".join(failures[:15]))
