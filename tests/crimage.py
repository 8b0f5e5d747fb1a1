"""The checkpoint image in Python (docs/CHECKPOINT.md), for the tests that
make or change one: zvisor's section hash, and a version 2 image made
over into the version 1 layout (tests/test_cr_lazy.py)."""
import json
import struct
from pathlib import Path

M = (1 << 64) - 1
P1 = 0x9e3779b185ebca87
P2 = 0xc2b2ae3d27d4eb4f


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def image_hash(data, seed=0):
    """cr/image.c's hash: four lanes, each taking two 8-byte words (u, v)
    per 64-byte block as lane = rotl(lane ^ u, 29) * P1 + v."""
    v = [(seed + P1 + P2) & M, (seed + P2) & M, seed & M, (seed - P1) & M]
    nblk = len(data) // 64
    words = struct.unpack_from("<%dQ" % (nblk * 8), data)
    for i in range(0, nblk * 8, 8):
        for k in range(4):
            v[k] = (_rotl(v[k] ^ words[i + 2 * k], 29) * P1 + words[i + 2 * k + 1]) & M
    r = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M
    r = ((r ^ len(data)) * P1) & M
    for b in data[nblk * 64:]:
        r = (_rotl(r ^ b, 11) * P2) & M
    r ^= r >> 29
    r = (r * P1) & M
    return r ^ (r >> 32)


VMA2 = struct.Struct("<3Q2I2Q2q2IQ2I")  # struct zv_cr_vma (cr/memory.h)
VMA1_SIZE = 72
PLACED = 1


def to_version1(image):
    """Rewrites a plain (uncompressed) version 2 image as version 1: mm
    records without pages_off and flags, their pages one after the other."""
    image = Path(image)
    index = json.loads((image / "index.json").read_text())
    mm = (image / "mm.bin").read_bytes()
    pages = (image / "pages.bin").read_bytes()
    mm1, pages1, at = bytearray(), bytearray(), 0
    while at < len(mm):
        f = VMA2.unpack_from(mm, at)
        start, nruns, pathlen, pages_off, flags = f[0], f[5], f[9], f[11], f[12]
        rest = ((pathlen + 8) & ~7 if pathlen else 0) + nruns * 16
        mm1 += mm[at:at + VMA1_SIZE] + mm[at + VMA2.size:at + VMA2.size + rest]
        runs = mm[at + VMA2.size + rest - nruns * 16:at + VMA2.size + rest]
        off = pages_off
        for i in range(nruns):
            addr, npages = struct.unpack_from("<2Q", runs, i * 16)
            if flags & PLACED:
                off = pages_off + (addr - start)
            pages1 += pages[off:off + npages * 4096]
            off += npages * 4096
        at += VMA2.size + rest
    (image / "mm.bin").write_bytes(bytes(mm1))
    (image / "pages.bin").write_bytes(bytes(pages1))
    for sec in index["sections"]:
        if sec["name"] in ("mm", "pages"):
            data = bytes(mm1) if sec["name"] == "mm" else bytes(pages1)
            sec["size"] = len(data)
            sec["hash"] = "%016x" % image_hash(data)
            sec.pop("data", None)
    index["version"] = 1
    (image / "index.json").write_text(json.dumps(index, indent=2) + "\n")
