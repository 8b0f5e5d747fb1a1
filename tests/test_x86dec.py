"""The instruction-length decoder and syscall-site finder of
kernel/intercept/x86len.c, through the host-side harness tests/x86dec
(built with libc into build/x86dec).

1. Hand-written encodings: prefixes, REX.W/66/67 immediates, moffs, f6/f7,
   3DNow!, VEX, EVEX, XOP, RIP-relative operands, invalid opcodes; and the
   finder on byte strings: 0f 05 inside an immediate or a displacement, data
   before and after a syscall.
2. Real binaries against objdump -d (binutils): (a) over objdump's linear
   sweep of every executable section the decoder's linear sweep gives the
   same instruction starts and lengths; (b) every syscall site the finder
   reports is one of objdump's `syscall` instructions (no false positive, also
   when given whole executable segments, headers included), and it finds
   at least 99% of them. Run with -s to see the numbers.
3. x86len.c builds with the kernel's flags without warnings and calls
   nothing (no libc, no memset/memcpy the compiler might add).
"""
import fcntl
import os
import shutil
import subprocess
import sysconfig
import threading
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HARNESS = REPO / "build" / "x86dec" / "x86dec"
GUESTS = REPO / "tests" / "guests"
MIN_AGREEMENT = 0.9999  # instructions whose length matches objdump's
MIN_COVERAGE = 0.99     # objdump's syscalls the finder reports

pytestmark = pytest.mark.native_only  # none of this runs zvisor

_build_lock = threading.Lock()


@lru_cache(maxsize=None)
def _build():
    if not shutil.which("make") or not shutil.which(os.environ.get("CC", "gcc")):
        return "no make or C compiler"
    # one build at a time across pytest-xdist's workers: a worker running
    # the harness while another relinks it met a file not yet executable
    (REPO / "build").mkdir(exist_ok=True)
    with open(REPO / "build" / ".x86dec.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["make", "-s", "-C", str(REPO / "tests" / "x86dec")],
                           capture_output=True, text=True)
    if r.returncode:
        raise AssertionError("building the harness failed:\n" + r.stdout + r.stderr)
    return None


@pytest.fixture(scope="module")
def harness():
    with _build_lock:
        why = _build()
    if why:
        pytest.skip(why)
    return str(HARNESS)


def lines_through(harness, mode, lines):
    r = subprocess.run([harness, mode], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, check=True)
    out = r.stdout.splitlines()
    assert len(out) == len(lines)
    return out


# --------------------------------------------------------------------------
# 1. hand-written encodings

# (hex bytes, length or -1, what)
LEN_CASES = [
    ("90", 1, "nop"),
    ("f3c3", 2, "repz ret"),
    ("0f05", 2, "syscall"),
    ("4889e5", 3, "mov %rsp,%rbp"),
    ("488b0500000000", 7, "mov 0(%rip),%rax: RIP-relative disp32"),
    ("678b0500000000", 7, "addr32: EIP-relative, same form"),
    ("8b042578563412", 7, "SIB without base or index: disp32"),
    ("8b040500000000", 7, "SIB index, no base (mod 0, base 5): disp32"),
    ("8b440500", 4, "SIB base rbp with mod 1: disp8"),
    ("8b442408", 4, "mov 8(%rsp),%eax"),
    ("8b842400010000", 7, "SIB + disp32"),
    ("678b0424", 4, "addr32 (%esp)"),
    ("8b4508", 3, "disp8"),
    ("0544332211", 5, "add imm32"),
    ("66052211", 4, "66: imm16"),
    ("480544332211", 6, "REX.W: imm32"),
    ("66480544332211", 7, "REX.W beats 66"),
    ("b844332211", 5, "mov imm32"),
    ("66b82211", 4, "mov imm16"),
    ("48b88877665544332211", 10, "movabs imm64"),
    ("49bf8877665544332211", 10, "movabs imm64 to r15"),
    ("6648b88877665544332211", 11, "66 REX.W movabs"),
    ("4866b82211", 5, "REX before 66 is ignored: imm16"),
    ("486690", 3, "REX before a prefix still belongs to the instruction"),
    ("4048c3", 3, "two REX"),
    ("41b001", 3, "mov imm8 to r8b"),
    ("6844332211", 5, "push imm32"),
    ("66682211", 4, "pushw imm16"),
    ("6a01", 2, "push imm8"),
    ("69c044332211", 6, "imul imm32"),
    ("6669c02211", 5, "imul imm16"),
    ("6bc001", 3, "imul imm8"),
    ("c21000", 3, "ret imm16"),
    ("ca1000", 3, "lret imm16"),
    ("c8100001", 4, "enter imm16, imm8"),
    ("cd80", 2, "int 0x80"),
    ("e800000000", 5, "call rel32"),
    ("48e800000000", 6, "REX.W call rel32"),
    ("ebfe", 2, "jmp rel8"),
    ("0f8400000000", 6, "je rel32"),
    ("e3fe", 2, "jrcxz"),
    ("f2e800000000", 6, "bnd call"),
    ("2e7400", 3, "je with a branch hint"),
    ("66e80000", -1, "66 call: rel16 on AMD, rel32 on Intel"),
    ("660f840000", -1, "66 jcc: vendor-dependent"),
    ("a18877665544332211", 9, "mov moffs64,%eax"),
    ("48a38877665544332211", 10, "mov %rax,moffs64"),
    ("66a18877665544332211", 10, "66 does not shorten moffs"),
    ("67a144332211", 6, "addr32: moffs32"),
    ("6766a044332211", 7, "addr32 data16 moffs32"),
    ("f6c101", 3, "test $1,%cl"),
    ("f6c901", 3, "f6 /1: test alias"),
    ("f6d1", 2, "not %cl: no immediate"),
    ("f644240801", 5, "testb $1,8(%rsp)"),
    ("f7c144332211", 6, "test imm32"),
    ("66f7c12211", 5, "test imm16"),
    ("48f7c144332211", 7, "test imm32 (REX.W)"),
    ("f7d9", 2, "neg"),
    ("f7e1", 2, "mul"),
    ("f7050000000044332211", 10, "test imm32, RIP-relative"),
    ("c7042444332211", 7, "movl imm32 to memory"),
    ("66c704242211", 6, "movw imm16 to memory"),
    ("48c7c0ffffffff", 7, "mov imm32 sign-extended"),
    ("c6f801", 3, "xabort"),
    ("c7f844332211", 6, "xbegin rel32"),
    ("0f0fc1b4", 4, "3DNow! pfmul: imm8 suffix"),
    ("0f0f4010b4", 5, "3DNow! with disp8"),
    ("0f0f0500000000b4", 8, "3DNow! RIP-relative"),
    ("0f0e", 2, "femms"),
    ("c5f877", 3, "vzeroupper: no ModRM"),
    ("c5fc77", 3, "vzeroall"),
    ("c4e17877", 4, "3-byte VEX vzeroupper"),
    ("c5fd6f06", 4, "vmovdqa (%rsi),%ymm0"),
    ("c5f970c11b", 5, "vpshufd: imm8"),
    ("c5f173d108", 5, "vpsrlq imm8"),
    ("c4e27d18c0", 5, "VEX map 0f38: no imm"),
    ("c4e279000500000000", 9, "VEX map 0f38 RIP-relative"),
    ("c4e37d18c101", 6, "VEX map 0f3a: imm8"),
    ("48c5f877", -1, "REX before VEX"),
    ("66c5f877", -1, "66 before VEX"),
    ("c4e07877", -1, "VEX map 0"),
    ("62f17c4828c1", 6, "EVEX vmovaps %zmm1,%zmm0"),
    ("62f17c4828442401", 8, "EVEX disp8*N is one byte"),
    ("62f17d4872e105", 7, "EVEX map 1 shift: imm8"),
    ("62f37d481bc101", 7, "EVEX map 3: imm8"),
    ("62f27d4800c1", 6, "EVEX map 2"),
    ("62f57c4858c1", 6, "EVEX map 5 (FP16)"),
    ("62f1784828c1", -1, "EVEX with P1 bit 2 clear"),
    ("62f17c48", -1, "truncated EVEX"),
    ("8fe878c2c001", 6, "XOP map 8: imm8"),
    ("8fe97890c0", 5, "XOP map 9"),
    ("8fea7810c044332211", 9, "XOP map 0a: imm32"),
    ("8fe07810c0", -1, "XOP map 0"),
    ("8fc0", 2, "pop %rax"),
    ("8f4008", 3, "pop 8(%rax)"),
    ("418fc0", 3, "pop %r8"),
    ("0f2000", 3, "mov %cr0: mod is ignored, no displacement"),
    ("0f22d8", 3, "mov to %cr3"),
    ("8d0424", 3, "lea (%rsp)"),
    ("8dc0", -1, "lea with a register operand"),
    ("f30fb8c0", 4, "popcnt"),
    ("0fb8c0", -1, "jmpe"),
    ("660f78c00102", 6, "extrq imm8, imm8"),
    ("0f78c0", 3, "vmread"),
    ("f30f1efa", 4, "endbr64"),
    ("662e0f1f840000000000", 10, "cs nopw"),
    ("66662e0f1f840000000000", 11, "data16 cs nopw"),
    ("f0480fb10e", 5, "lock cmpxchg"),
    ("0f3800c1", 4, "pshufb"),
    ("660f3800c1", 5, "pshufb xmm"),
    ("0f38ffc1", -1, "undefined 0f 38 opcode"),
    ("0f3a0fc108", 5, "palignr imm8"),
    ("660f3a0fc108", 6, "palignr xmm imm8"),
    ("0f3affc101", -1, "undefined 0f 3a opcode"),
    ("0fbae003", 4, "bt imm8"),
    ("0fa4c104", 4, "shld imm8"),
    ("0fc2c100", 4, "cmpps imm8"),
    ("d8c1", 2, "fadd"),
    ("dd0424", 3, "fldl (%rsp)"),
    ("9b", 1, "fwait (objdump joins it to the next x87 instruction)"),
    ("666666666666666666666666666690", 15, "15 bytes"),
    ("66666666666666666666666666666690", -1, "16 bytes"),
    ("6666666666666666666666666666", -1, "prefixes only"),
    ("48b81122", -1, "immediate runs past the end"),
    ("e80000", -1, "rel32 runs past the end"),
    ("0f", -1, "escape only"),
    ("", -1, "nothing"),
] + [(op, -1, "invalid in 64-bit mode") for op in (
    "06", "07", "0e", "16", "17", "1e", "1f", "27", "2f", "37", "3f", "60", "61", "82c001",
    "9a", "ce", "d40a", "d50a", "d6", "ea", "0f04", "0f0a", "0f0c", "0f24c0", "0f36", "0f7a")]


def test_lengths(harness):
    got = lines_through(harness, "len", [h for h, _, _ in LEN_CASES])
    bad = ["%s: got %s, want %d (%s)" % (h, g, want, what)
           for (h, want, what), g in zip(LEN_CASES, got) if int(g) != want]
    assert not bad, "\n".join(bad)


# (hex bytes, whether the instruction copies rsp anywhere but into rsp, what):
# the premise of --rewrite=load's red-zone check (redzone.c)
RSP_CASES = [
    ("4889e5", 1, "mov %rsp,%rbp"),
    ("488bc4", 1, "mov %rsp,%rax (8b form)"),
    ("488d7c24f0", 1, "lea -0x10(%rsp),%rdi"),
    ("488d3cc4", 1, "lea (%rsp,%rax,8),%rdi"),
    ("488d7c2410", 0, "lea 0x10(%rsp),%rdi (a local in the frame)"),
    ("488d0424", 0, "lea (%rsp),%rax"),
    ("54", 1, "push %rsp"),
    ("ff f4".replace(" ", ""), 1, "push %rsp (ff /6)"),
    ("4894", 1, "xchg %rsp,%rax"),
    ("4887e0", 1, "xchg %rsp,%rax (87 form)"),
    ("4801e0", 1, "add %rsp,%rax"),
    ("480f45c4", 1, "cmovne %rsp,%rax"),
    ("4889642408", 1, "mov %rsp,8(%rsp)"),
    ("c8100000", 1, "enter"),
    ("66480f6ec4", 1, "movq %rsp,%xmm0"),
    ("4889ec", 0, "mov %rbp,%rsp"),
    ("488d6424f8", 0, "lea -8(%rsp),%rsp"),
    ("4883ec18", 0, "sub $0x18,%rsp"),
    ("4883e4f0", 0, "and $-16,%rsp"),
    ("83e00f", 0, "and $0xf,%eax (/4, not rsp)"),
    ("4c89e0", 0, "mov %r12,%rax"),
    ("4154", 0, "push %r12"),
    ("48894424f8", 0, "mov %rax,-8(%rsp)"),
    ("488b4424f8", 0, "mov -8(%rsp),%rax"),
    ("4885e4", 0, "test %rsp,%rsp"),
    ("4839e0", 0, "cmp %rsp,%rax"),
    ("ffe0", 0, "jmp *%rax"),
    ("0f05", 0, "syscall"),
]


def test_rsp_copies(harness):
    got = lines_through(harness, "rsp", [h for h, _, _ in RSP_CASES])
    bad = ["%s: got %s, want %d (%s)" % (h, g, want, what)
           for (h, want, what), g in zip(RSP_CASES, got) if int(g) != want]
    assert not bad, "\n".join(bad)


PAD = "90" * 8          # nops: enough for confirmation after a site
LEAD = "90" * 20        # the start of a region: a resync window of 15 offsets, then
                        # CONFIRM_BEFORE instructions before a site counts
EXIT = "b83c0000000f05"  # mov $60,%eax; syscall (site at offset 5)

# (hex bytes, the offsets the finder must report, what)
FIND_CASES = [
    (LEAD + EXIT + "c3" + PAD, [25], "a syscall"),
    (EXIT + "c3" + PAD, [], "a syscall too close to the start: decodings agree only after it"),
    (PAD + "660f05c3" + PAD, [], "a prefixed syscall is not reported"),
    (PAD + "b80f050000c3" + PAD, [], "0f 05 in an imm32"),
    (PAD + "b00f05c3" + PAD, [], "0f 05 in an imm8 and the next opcode"),
    (PAD + "488b050f050000c3" + PAD, [], "0f 05 in a RIP-relative displacement"),
    (PAD + "8b840f05000000c3" + PAD, [], "0f 05 as SIB and disp32"),
    (PAD + "48b80f050f050f050f05c3" + PAD, [], "0f 05 in an imm64"),
    (PAD + "c4e37d180f05c3" + PAD, [], "0f 05 as ModRM and imm8 of VEX"),
    (LEAD + "0f05" + PAD + "0f05" + "c3", [20, 30], "the end of the region confirms"),
    (PAD + EXIT + "06" + PAD, [], "data right after the syscall: not confirmed"),
    (PAD + EXIT + "909090ce" + PAD, [], "data 3 instructions after it: not confirmed"),
    ("0606060606" + LEAD + EXIT + "c3" + PAD, [30], "invalid bytes, then code"),
    (PAD + "0e" + "0f05" * 3 + PAD + EXIT + "c3" + PAD, [28],
     "0f 05 0f 05 ... after a bad byte decodes two ways: not reported"),
    ("d6" * 40 + PAD + "0f05" + PAD, [48], "after a run of bad bytes, the next window"),
    ("c3" + "b0" * 40 + "0f05c3", [], "b0 b0 ...: two decodings that meet only at the end"),
    (LEAD + EXIT + "c3" + PAD + EXIT + "c3" + PAD, [25, 41], "two sites"),
]


def test_find(harness):
    got = lines_through(harness, "find", [h for h, _, _ in FIND_CASES])
    bad = []
    for (h, want, what), g in zip(FIND_CASES, got):
        sites = [] if g == "-" else [int(x) for x in g.split()]
        if sites != want:
            bad.append("%s: got %s, want %s (%s)" % (h, sites, want, what))
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------
# 2. real binaries against objdump


def _python_binary():
    """python3's executable, or its libpython when it is linked dynamically."""
    exe = os.path.realpath(shutil.which("python3") or "")
    if os.path.getsize(exe) > 1 << 20:
        return exe
    lib = Path(sysconfig.get_config_var("LIBDIR") or "") / (sysconfig.get_config_var("INSTSONAME") or "")
    return str(lib) if lib.is_file() else exe


def _go_binary():
    path = GUESTS / "build" / "goguest"
    if not path.exists():
        go = shutil.which("go") or "/usr/local/go/bin/go"
        if not os.access(go, os.X_OK):
            return None
        subprocess.run(["make", "-s", "-C", str(GUESTS), "GO=" + go, "build/goguest"],
                       capture_output=True, timeout=600)
    return str(path) if path.exists() else None


def _musl_binary():
    for name in ("syscalls.musl", "hello.musl"):
        if (GUESTS / "build" / name).exists():
            return str(GUESTS / "build" / name)
    return None


BINARIES = {
    "libc": lambda: "/lib/x86_64-linux-gnu/libc.so.6",
    "ld.so": lambda: os.path.realpath("/lib64/ld-linux-x86-64.so.2"),
    "python3": _python_binary,
    "busybox": lambda: shutil.which("busybox") or "/bin/busybox",
    "go": _go_binary,
    "musl": _musl_binary,
}
WHY_MISSING = {
    "go": "no Go guest (tests/guests/build/goguest) and no go to build it",
    "musl": "no musl guest: run `make -C tests/guests` (needs musl-gcc)",
}


class Objdump:
    """objdump -d of the executable sections: {address: (length, bytes, text)}.
    -z: also decode blocks of zeros, as the harness does."""

    def __init__(self, path):
        out = subprocess.run(["objdump", "-d", "-w", "-z", path], capture_output=True,
                             text=True, errors="replace", check=True).stdout
        self.insns = {}
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) < 3 or not parts[0].endswith(":"):
                continue
            self.insns[int(parts[0][:-1], 16)] = (len(parts[1].split()), parts[1].strip(), parts[2])
        self.syscalls = {a for a, (n, b, _) in self.insns.items() if b == "0f 05"}


@lru_cache(maxsize=None)
def _binary(name):
    path = BINARIES[name]()
    if not path or not os.path.isfile(path):
        return None, WHY_MISSING.get(name, "%s is not installed" % (path or name))
    if not shutil.which("objdump"):
        return None, "objdump is missing (binutils: scripts/install-deps.sh)"
    return path, None


@lru_cache(maxsize=None)
def _objdump(path):
    return Objdump(path)


@pytest.fixture(params=list(BINARIES))
def binary(request, harness):
    path, why = _binary(request.param)
    if why:
        pytest.skip(why)
    return path


def _harness_out(harness, mode, path):
    return subprocess.run([harness, mode, path], capture_output=True, text=True,
                          check=True).stdout.split()


def test_lengths_agree_with_objdump(harness, binary):
    # The two processes run side by side; parsing waits for both.
    ours = {}

    def sweep():
        it = _harness_out(harness, "lens", binary)
        ours.update(zip((int(a, 16) for a in it[0::2]), map(int, it[1::2])))

    t = threading.Thread(target=sweep)
    t.start()
    od = _objdump(binary)
    t.join()
    compared, undecoded, bad = 0, 0, []
    for a, (n, hexes, text) in od.insns.items():
        if text.startswith("(bad)") or text.startswith(".byte"):
            undecoded += 1  # objdump's own verdict; not compared
            continue
        compared += 1
        mine = ours.get(a)
        if mine == n:
            continue
        # objdump shows fwait (9b) and the x87 instruction after it as one
        # (fstcw = fwait; fnstcw); the CPU decodes two instructions.
        if hexes.startswith("9b ") and mine == 1 and ours.get(a + 1) == n - 1:
            continue
        bad.append("%x: objdump %d, ours %s: %s  %s" % (a, n, mine, hexes, text))
    print("\n%s: %d instructions compared, %d mismatches, %d that objdump cannot decode"
          % (binary, compared, len(bad), undecoded))
    assert compared
    assert len(bad) <= (1 - MIN_AGREEMENT) * compared, (
        "%d of %d instructions differ from objdump:\n%s" % (len(bad), compared, "\n".join(bad[:200])))


def test_syscall_sites_against_objdump(harness, binary):
    od = _objdump(binary)
    sites = {int(a, 16) for a in _harness_out(harness, "sites", binary)}
    seg_sites = {int(a, 16) for a in _harness_out(harness, "segsites", binary)}
    data_sites = _harness_out(harness, "datasites", binary)
    print("\n%s: objdump %d syscalls, found %d in sections, %d in segments; "
          "%d sites claimed in data sections"
          % (binary, len(od.syscalls), len(sites & od.syscalls), len(seg_sites & od.syscalls),
             len(data_sites)))
    for what, found in (("sections", sites), ("segments", seg_sites)):
        wrong = sorted(found - od.syscalls)
        assert not wrong, "not syscall instructions (%s): %s" % (
            what, " ".join("%x" % a for a in wrong[:50]))
    missed = sorted(od.syscalls - sites)
    assert len(missed) <= (1 - MIN_COVERAGE) * len(od.syscalls), (
        "%d of %d syscalls missed: %s" % (len(missed), len(od.syscalls),
                                          " ".join("%x" % a for a in missed[:50])))


# --------------------------------------------------------------------------
# 3. kernel build rules


def test_builds_freestanding(tmp_path):
    if not shutil.which("make") or not shutil.which("nm"):
        pytest.skip("no make or nm")
    r = subprocess.run(["make", "-s", "--no-print-directory",
                        "--eval=zv-print-kcflags: ; @echo $(KCFLAGS)", "zv-print-kcflags"],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    obj = tmp_path / "x86len.o"
    cc = os.environ.get("CC", "gcc")
    r = subprocess.run([cc] + r.stdout.split() + ["-Werror", "-fstack-usage", "-c",
                                                  "kernel/intercept/x86len.c", "-o", str(obj)],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    undef = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True).stdout
    assert not undef.strip(), "x86len.c calls out of itself:\n" + undef
    for line in (tmp_path / "x86len.su").read_text().splitlines():
        frame = int(line.split("\t")[1])
        assert frame <= 512, "large stack frame: " + line
