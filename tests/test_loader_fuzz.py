"""Fuzzing the program loader (kernel/sys/execelf.c) with mutated ELF files.

Small "ok" programs (gcc -static, gcc -static-pie, gcc dynamic) are mutated in
their ELF header and program header table: random byte flips, bad values in
chosen fields, PT_INTERP strings, relocated or enlarged header tables and
truncation. Then:

1. `zvisor check-elf` (zv_exec_resolve alone) judges every mutant, in batches:
   one line per file, "ok" or "<ENAME> <reason>", and it never dies.
2. A sample of rejected mutants runs under `zvisor run --`: exit 126 (127 for
   ENOENT) and exactly one stderr line "zvisor: ...". Where the host's execve
   refuses the file too, it must give the errno check-elf reported.
3. A sample of accepted mutants runs natively and under zvisor: the host must
   not refuse it, and zvisor must not die by a signal unless the native run
   does; a mutant that exits natively must exit the same way with the same
   output under zvisor (or be refused cleanly at load time).

Environment: ZV_FUZZ_SEED (default fixed), ZV_FUZZ_N (number of mutants),
ZV_LOADER_FUZZ_BIN (a binary with zvisor's check-elf and run commands to use
instead of build/zvisor, e.g. build/loader_harness/harness).
"""
import concurrent.futures
import ctypes
import errno
import os
import random
import re
import resource
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ZVISOR = Path(os.environ.get("ZV_LOADER_FUZZ_BIN", ROOT / "build" / "zvisor")).absolute()
SEED = int(os.environ.get("ZV_FUZZ_SEED", "424242"))
N_MUTANTS = int(os.environ.get("ZV_FUZZ_N", "10000"))
BATCH = 500
N_REJECTED_RUNS = int(os.environ.get("ZV_FUZZ_REJECTED_RUNS", "300"))
N_ACCEPTED_RUNS = int(os.environ.get("ZV_FUZZ_ACCEPTED_RUNS", "100"))
HEAD = 64 * 1024  # mutations live here; the rest of a big file stays a hole in phase 1

PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_PHDR, PT_TLS = 0, 1, 2, 3, 4, 6, 7
PT_GNU_STACK = 0x6474E551
LINE_RE = re.compile(r"^(ok|E[A-Z0-9]+ [^\n]+)$")

OK_C = r"""
#include <stdio.h>
int main(void) { puts("ok"); return 0; }
"""


# --------------------------------------------------------------------------
# base programs and helper files


class Base:
    def __init__(self, name, path):
        self.name = name
        self.path = path
        self.data = path.read_bytes()
        self.phoff = struct.unpack_from("<Q", self.data, 32)[0]
        self.phnum = struct.unpack_from("<H", self.data, 56)[0]
        # Small files are always written whole; big ones sparse in phase 1.
        self.sparse = len(self.data) > HEAD

    def phdr(self, i):
        return struct.unpack_from("<IIQQQQQQ", self.data, self.phoff + 56 * i)

    def index_of(self, ptype):
        return [i for i in range(self.phnum) if self.phdr(i)[0] == ptype]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    if not ZVISOR.exists():
        pytest.skip(f"{ZVISOR} is not built")
    if not shutil.which("gcc"):
        pytest.skip("gcc is missing")
    d = tmp_path_factory.mktemp("loader_fuzz")
    (d / "ok.c").write_text(OK_C)
    bases = []
    for name, flags in (("static", ["-static"]), ("dyn", []), ("spie", ["-static-pie"])):
        out = d / f"ok_{name}"
        r = subprocess.run(["gcc", "-O2", *flags, "-o", str(out), str(d / "ok.c")], capture_output=True)
        if r.returncode == 0:
            bases.append(Base(name, out))
    if not any(b.name == "static" for b in bases):
        pytest.skip("gcc -static does not work here")
    # Files a PT_INTERP may name.
    files = d / "files"
    files.mkdir()
    (files / "text").write_bytes(b"#!/bin/sh\necho this is not an ELF interpreter at all, sorry\n" * 3)
    (files / "short").write_bytes(b"\x7fELF\x02\x01\x01")
    (files / "notexec").write_bytes(bases[0].data[:4096])
    for f in ("text", "short"):
        os.chmod(files / f, 0o755)
    os.chmod(files / "notexec", 0o644)
    c32 = bytearray(bases[0].data)
    c32[4] = 1
    (files / "class32").write_bytes(c32)
    os.chmod(files / "class32", 0o755)
    interps = [
        b"/lib64/ld-linux-x86-64.so.2",
        b"/nonexistent/ld.so",
        b"",
        str(files).encode(),
        str(files / "text").encode(),
        str(files / "short").encode(),
        str(files / "notexec").encode(),
        str(files / "class32").encode(),
        str(bases[0].path).encode(),  # a static executable as the interpreter
        b"/bin/sh",  # has a PT_INTERP itself
        b"/etc/passwd",
        b"relative/ld.so",
        b"/" * 300,
        b"/tmp/" + b"x" * 300,
    ]
    return {"dir": d, "bases": bases, "interps": interps}


# --------------------------------------------------------------------------
# mutations: a mutant is (head bytes, bytes appended after the real file,
# final length or None); it is rebuilt from its index, so nothing is stored.


def interesting64(rng, orig, size):
    return rng.choice([
        0, 1, 0xFFF, 0x1000, 0x1001, orig + 1, orig - 1 if orig else 0, orig + 0x1000,
        max(orig - 0x1000, 0), orig * 2, size - 1, size, size + 1, size + 0x1000, 1 << 32,
        1 << 47, 0x7E0000000000, 0x7FFFFFFFF000, 0x800000000000, 1 << 63, (1 << 64) - 1,
        (1 << 64) - 0x1000, rng.getrandbits(64), rng.randrange(max(size, 1)),
        orig + 0x1000 * rng.randrange(1, 1 << 20),
    ]) & ((1 << 64) - 1)


class Mutant:
    def __init__(self, base):
        self.base = base
        self.head = bytearray(base.data[:HEAD])
        self.extra = bytearray()
        self.trunc = None
        self.phoff = base.phoff
        self.ops = []

    @property
    def size(self):
        return len(self.base.data) + len(self.extra)

    def append(self, blob):
        off = self.size
        self.extra += blob
        return off

    def put(self, fmt, off, value):
        if off + struct.calcsize(fmt) <= len(self.head):
            struct.pack_into(fmt, self.head, off, value)

    def get(self, fmt, off):
        return struct.unpack_from(fmt, self.head, off)[0]


PH_FIELDS = {  # name: (offset in the phdr, format)
    "p_type": (0, "<I"), "p_flags": (4, "<I"), "p_offset": (8, "<Q"), "p_vaddr": (16, "<Q"),
    "p_paddr": (24, "<Q"), "p_filesz": (32, "<Q"), "p_memsz": (40, "<Q"), "p_align": (48, "<Q"),
}


def op_flip_ehdr(m, rng, env):
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(64)
        m.head[i] = rng.randrange(256) if rng.random() < 0.5 else m.head[i] ^ (1 << rng.randrange(8))
    return "flip_ehdr"


def op_flip_phdrs(m, rng, env):
    n = m.base.phnum * 56
    for _ in range(rng.randint(1, 6)):
        i = m.phoff + rng.randrange(n)
        if i < len(m.head):
            m.head[i] = rng.randrange(256) if rng.random() < 0.5 else m.head[i] ^ (1 << rng.randrange(8))
    return "flip_phdrs"


def op_ehdr_field(m, rng, env):
    field = rng.choice(["class", "data", "version", "osabi", "type", "machine", "phentsize", "phnum", "phoff", "entry"])
    if field == "class":
        m.head[4] = rng.choice([0, 1, 3, 255])
    elif field == "data":
        m.head[5] = rng.choice([0, 2, 3, 255])
    elif field == "version":
        m.head[6] = rng.choice([0, 2, 255])
    elif field == "osabi":
        m.head[7] = rng.randrange(256)
    elif field == "type":
        m.put("<H", 16, rng.choice([0, 1, 2, 3, 4, 0xFE00, 0xFFFF]))
    elif field == "machine":
        m.put("<H", 18, rng.choice([0, 3, 8, 40, 62, 183, 243, 0x3E00, 0xFFFF]))
    elif field == "phentsize":
        m.put("<H", 54, rng.choice([0, 32, 55, 57, 64, 0xFFFF]))
    elif field == "phnum":
        n = m.base.phnum
        m.put("<H", 56, rng.choice([0, 1, 2, n - 1, n + 1, n + 5, 73, 74, 512, 513, 1170, 1171, 0xFFFF]))
    elif field == "phoff":
        m.put("<Q", 32, interesting64(rng, m.base.phoff, m.size))
    else:
        m.put("<Q", 24, interesting64(rng, m.get("<Q", 24), m.size))
    return "ehdr." + field


def pick_phdr(m, rng, prefer=PT_LOAD):
    loads = m.base.index_of(prefer)
    if loads and rng.random() < 0.6:
        return rng.choice(loads)
    return rng.randrange(m.base.phnum)


def op_phdr_field(m, rng, env):
    i = pick_phdr(m, rng)
    name = rng.choice(list(PH_FIELDS))
    off, fmt = PH_FIELDS[name]
    at = m.phoff + 56 * i + off
    orig = m.get(fmt, at)
    if name == "p_type":
        v = rng.choice([PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_PHDR, PT_TLS, PT_GNU_STACK,
                        rng.getrandbits(32)])
    elif name == "p_flags":
        v = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, rng.getrandbits(32)])
    else:
        v = interesting64(rng, orig, m.size)
    m.put(fmt, at, v)
    return f"ph[{i}].{name}"


def op_interp(m, rng, env):
    """Point a PT_INTERP (the existing one, or a converted header) at a string."""
    existing = m.base.index_of(PT_INTERP)
    i = existing[0] if existing and rng.random() < 0.7 else pick_phdr(m, rng, PT_NOTE)
    s = rng.choice(env["interps"])
    blob = s + b"\0"
    kind = rng.choice(["ok", "ok", "ok", "nonul", "size0", "size1", "big", "beyond", "huge_off"])
    off = m.append(blob + b"\0" * rng.randrange(8))
    size = len(blob)
    if kind == "nonul":
        size = max(len(s), 1)
        m.extra[off - len(m.base.data) + size - 1] = ord("x")
    elif kind == "size0":
        size = 0
    elif kind == "size1":
        size = 1
    elif kind == "big":
        size = rng.choice([4096, 4097, 1 << 20])
    elif kind == "beyond":
        off = m.size - rng.randrange(1, size + 1)
    elif kind == "huge_off":
        off = rng.choice([1 << 40, (1 << 64) - 8, 1 << 63])
    base = m.phoff + 56 * i
    m.put("<I", base, PT_INTERP)
    m.put("<Q", base + 8, off)
    m.put("<Q", base + 32, size)
    return f"interp[{i}].{kind}"


def op_interp_bytes(m, rng, env):
    """Corrupt the bytes of the existing interpreter string in place."""
    existing = m.base.index_of(PT_INTERP)
    if not existing:
        return op_flip_phdrs(m, rng, env)
    _, _, off, _, _, fsz, _, _ = m.base.phdr(existing[0])
    for _ in range(rng.randint(1, 3)):
        j = off + rng.randrange(fsz)
        m.head[j] = rng.choice([0, ord("/"), ord("x"), ord(" "), ord("\n"), rng.randrange(256)])
    return "interp_bytes"


def op_move_phdrs(m, rng, env):
    """Copy the table to the end of the file, possibly longer, and point e_phoff at it."""
    n = m.base.phnum
    table = bytearray(m.head[m.phoff:m.phoff + 56 * n])
    newn = rng.choice([n, n, n + 1, 73, 74, 512, 513, 600, 1170, 1171])
    for _ in range(newn - n):
        table += rng.choice([bytes(56), rng.randbytes(56), table[:56]])
    m.append(bytes(rng.randrange(8)) + table)
    off = m.size - len(table)
    m.put("<Q", 32, off)
    m.put("<H", 56, newn & 0xFFFF)
    return f"move_phdrs({newn})"


def op_truncate(m, rng, env):
    size = m.size
    end_ph = m.phoff + 56 * m.base.phnum
    m.trunc = rng.choice([
        rng.randrange(0, 64), rng.randrange(64, end_ph + 1), rng.randrange(0, size), size - 1,
        rng.randrange(end_ph, min(size, 0x10000)),
    ])
    return f"truncate({m.trunc})"


OPS = [
    (op_flip_ehdr, 10), (op_flip_phdrs, 15), (op_ehdr_field, 20), (op_phdr_field, 30),
    (op_interp, 12), (op_interp_bytes, 4), (op_move_phdrs, 5), (op_truncate, 8),
]


def make_mutant(env, index):
    rng = random.Random(f"{SEED}/{index}")
    bases = env["bases"]
    base = bases[index % len(bases)]
    m = Mutant(base)
    funcs, weights = zip(*OPS)
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        m.ops.append(rng.choices(funcs, weights)[0](m, rng, env))
    return m


def write_mutant(m, path, whole):
    """Writes the mutant; unless whole, a big file's tail past HEAD is a hole
    (the checks read headers only; what runs is always written whole)."""
    size = m.size if m.trunc is None else m.trunc
    with open(path, "wb") as f:
        f.write(m.head)
        if whole or not m.base.sparse:
            f.write(m.base.data[len(m.head):])
        else:
            f.truncate(len(m.base.data))
            f.seek(len(m.base.data))
        f.write(m.extra)
        f.truncate(size)
    os.chmod(path, 0o755)


# --------------------------------------------------------------------------
# running


def check_elf(paths):
    r = subprocess.run([str(ZVISOR), "check-elf", *map(str, paths)], capture_output=True, timeout=120)
    assert r.returncode == 0, f"check-elf exited with {r.returncode}: {r.stderr[-2000:]!r}"
    lines = r.stdout.decode("utf-8", "replace").split("\n")
    assert lines[-1] == "", "check-elf output does not end with a newline"
    lines = lines[:-1]
    assert len(lines) == len(paths), f"{len(paths)} files but {len(lines)} lines"
    for p, line in zip(paths, lines):
        assert LINE_RE.match(line), f"{p}: bad check-elf line {line!r}"
    return lines


def run(argv, timeout, cwd):
    """(kind, value, stdout, stderr): kind is exit, signal, errno or timeout."""
    try:
        r = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=cwd, start_new_session=True,
                           stdin=subprocess.DEVNULL)
    except OSError as e:
        return ("errno", errno.errorcode.get(e.errno, str(e.errno)), b"", b"")
    except subprocess.TimeoutExpired as e:
        return ("timeout", None, e.stdout or b"", e.stderr or b"")
    if r.returncode < 0:
        return ("signal", -r.returncode, r.stdout, r.stderr)
    return ("exit", r.returncode, r.stdout, r.stderr)


def no_core_dumps():
    old = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, old[1]))
    return old


def spread_sample(rng, items, key, n):
    """Up to n items, round-robin over the groups key() makes, so that rare
    reasons are not drowned by common ones."""
    groups = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    for g in groups.values():
        rng.shuffle(g)
    order = sorted(groups)
    rng.shuffle(order)
    out = []
    while len(out) < n and any(groups.values()):
        for k in order:
            if groups[k] and len(out) < n:
                out.append(groups[k].pop())
    return out


def reason_key(verdict):
    words = re.sub(r"0x[0-9a-f]+|\d+|/\S*", "#", verdict).split()
    return " ".join(words[:4])


# --------------------------------------------------------------------------
# the test


def test_loader_fuzz(env):
    work = env["dir"] / "mutants"
    work.mkdir(exist_ok=True)
    verdicts = {}
    for start in range(0, N_MUTANTS, BATCH):
        idx = list(range(start, min(start + BATCH, N_MUTANTS)))
        paths = []
        for i in idx:
            p = work / f"m{i}"
            write_mutant(make_mutant(env, i), p, whole=False)
            paths.append(p)
        for i, line in zip(idx, check_elf(paths)):
            verdicts[i] = line
        for p in paths:
            p.unlink()
    n_ok = sum(v == "ok" for v in verdicts.values())
    assert 0 < n_ok < len(verdicts), f"{n_ok} of {len(verdicts)} mutants accepted: the mutator is broken"

    rng = random.Random(SEED)
    rejected = spread_sample(rng, [i for i, v in verdicts.items() if v != "ok"],
                             lambda i: reason_key(verdicts[i]), N_REJECTED_RUNS)
    accepted = rng.sample([i for i, v in verdicts.items() if v == "ok"], min(N_ACCEPTED_RUNS, n_ok))

    # What runs is the whole file: judge those files again.
    runs = work / "run"
    runs.mkdir(exist_ok=True)
    chosen = rejected + accepted
    paths = {}
    for i in chosen:
        paths[i] = runs / f"m{i}"
        write_mutant(make_mutant(env, i), paths[i], whole=True)
    final = dict(zip(chosen, check_elf([paths[i] for i in chosen])))

    def one(i):
        p = str(paths[i])
        native = run([p], 3, runs)
        # A mutant that spins natively should spin under zvisor too: give
        # it as long; otherwise be generous (zvisor may be slower to start).
        under = run([str(ZVISOR), "run", "--", p], 3 if native[0] == "timeout" else 20, runs)
        if os.environ.get("ZV_FUZZ_VERBOSE"):
            print(i, native[:2], under[:2], flush=True)
        return i, native, under

    failures = []
    old = no_core_dumps()
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(one, chosen))
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, old)

    for i, native, under in results:
        verdict = final[i]
        what = f"mutant {i} ({' + '.join(make_mutant(env, i).ops)}; check-elf: {verdict})"
        kind, value, out, err = under
        if verdict != "ok":
            ename = verdict.split()[0]
            want = 127 if ename == "ENOENT" else 126
            lines = err.decode("utf-8", "replace").splitlines()
            if (kind, value) != ("exit", want):
                failures.append(f"{what}: zvisor run gave {kind} {value}, expected exit {want}")
            elif len(lines) != 1 or not lines[0].startswith("zvisor: "):
                failures.append(f"{what}: zvisor run stderr is not one 'zvisor: ' line: {lines!r}")
            if native[0] == "errno" and native[1] != ename:
                failures.append(f"{what}: the host's execve fails with {native[1]}, check-elf says {ename}")
            continue
        if native[0] == "errno":
            failures.append(f"{what}: check-elf accepts it but the host's execve fails with {native[1]}")
            continue
        if kind == "signal" and native[0] != "signal":
            failures.append(f"{what}: killed by signal {value} under zvisor, native: {native[0]} {native[1]}")
        elif kind == "timeout" and native[0] not in ("signal", "timeout"):
            failures.append(f"{what}: hangs under zvisor, native: {native[0]} {native[1]}")
        elif native[0] == "exit":
            # Same exit status and output, or refused cleanly when mapping it
            # (an address zvisor itself occupies).
            refused = kind == "exit" and value == 126 and err.startswith(b"zvisor: ") and err.count(b"\n") == 1
            if (kind, value, out) != native[:3] and not refused:
                failures.append(f"{what}: native exit {native[1]} {native[2][:100]!r}, under zvisor: {kind} {value} "
                                f"{out[:100]!r} {err[:300]!r}")
    assert not failures, f"{len(failures)} failures (seed {SEED}):\n" + "\n".join(failures[:40])


# --------------------------------------------------------------------------
# hand-made cases: check-elf's errno must be the host's execve errno


def host_execve_errno(path):
    """The errno of the host's execve(path), or 'ok' if it runs."""
    libc = ctypes.CDLL(None, use_errno=True)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(r)
            fd = os.open(os.devnull, os.O_RDWR)
            for t in (0, 1, 2):
                os.dup2(fd, t)
            argv = (ctypes.c_char_p * 2)(b"x", None)
            envp = (ctypes.c_char_p * 1)(None)
            libc.execve(path.encode(), argv, envp)
            os.write(w, errno.errorcode.get(ctypes.get_errno(), "?").encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 100)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode() or "ok"


def test_check_elf_errno_matches_host(env):
    d = env["dir"] / "errno"
    d.mkdir(exist_ok=True)
    static = env["bases"][0]
    ok = str(static.path)
    files = env["dir"] / "files"

    def mk(name, data, mode=0o755):
        p = d / name
        p.write_bytes(data)
        os.chmod(p, mode)
        return str(p)

    def with_interp(name, interp, size=None, off=None):
        dyn = next((b for b in env["bases"] if b.name == "dyn"), None)
        if dyn is None:
            return None
        data = bytearray(dyn.data)
        i = dyn.index_of(PT_INTERP)[0]
        at = len(data)
        data += interp
        struct.pack_into("<Q", data, dyn.phoff + 56 * i + 8, at if off is None else off)
        struct.pack_into("<Q", data, dyn.phoff + 56 * i + 32, len(interp) if size is None else size)
        return mk(name, data)

    os.symlink("loop_b", d / "loop_a")
    os.symlink("loop_a", d / "loop_b")
    os.symlink("missing", d / "dangling")
    os.mkfifo(d / "fifo")
    chain = ok
    for k in range(7):
        chain = mk(f"nest{k}", f"#!{chain}\n".encode())
    cases = [
        "", "/nonexistent", str(d), str(d) + "/", os.devnull, ok + "/x", ok + "/",
        str(files / "notexec"), str(d / "loop_a"), str(d / "dangling"), str(d / "fifo"), "x" * 300,
        "/tmp/" + "a/" * 2100, mk("empty", b""), mk("short", b"\x7fELF\x02"), mk("text", b"hello\n"),
        ok, mk("nest_ok", f"#!{ok} arg\n".encode()), mk("nest_missing", b"#!/nonexistent/interp\n"),
        mk("nest_dir", f"#!{d}\n".encode()), mk("nest_blank", b"#!   \n"), mk("nest_bare", b"#!"),
        mk("nest_long", b"#!" + b"a" * 300), mk("nest_text", f"#!{d / 'text'}\n".encode()),
        str(d / "nest4"), str(d / "nest5"), str(d / "nest6"),
        with_interp("i_missing", b"/nonexistent\0"), with_interp("i_dir", str(d).encode() + b"\0"),
        with_interp("i_short", str(files / "short").encode() + b"\0"),
        with_interp("i_text", str(files / "text").encode() + b"\0"),
        with_interp("i_noexec", str(files / "notexec").encode() + b"\0"),
        with_interp("i_empty", b"\0\0"), with_interp("i_nonul", b"/lib64/ld-linux-x86-64.so.2"),
        with_interp("i_size1", b"\0", 1), with_interp("i_big", b"/x\0", 4097),
        with_interp("i_beyond", b"/x\0", 64, None), with_interp("i_far", b"/x\0", 3, 1 << 40),
    ]
    bad = []
    cases = [c for c in cases if c is not None]
    got = check_elf(cases)
    for path, line in zip(cases, got):
        host = host_execve_errno(path)
        mine = "ok" if line == "ok" else line.split()[0]
        if host != mine:
            bad.append(f"{path[:80]!r}: host {host}, check-elf {line!r}")
    assert not bad, "\n".join(bad)
