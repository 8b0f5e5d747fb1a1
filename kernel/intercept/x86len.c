/* x86-64 instruction lengths, and the `syscall` instructions of a code region.
 *
 * --rewrite=load replaces each `syscall` (0f 05) of an executable mapping by
 * `call *%rax` (ff d0). Two bytes 0f 05 are a syscall only where an
 * instruction starts, so the region is decoded; no disassembler library can
 * be linked into the kernel, hence this decoder. It computes lengths only:
 * legacy prefixes, REX, the one-byte, 0f, 0f 38 and 0f 3a maps, ModRM, SIB,
 * displacements and immediates, VEX, EVEX, XOP and 3DNow!.
 *
 * 64-bit mode only. Facts of that mode the code relies on:
 * - 67 selects 32-bit addressing, whose ModRM/SIB forms are the 64-bit ones
 *   (mod 0 rm 5 is EIP-relative); 16-bit addressing does not exist. So 67
 *   changes only the moffs of a0-a3 (8 bytes, 4 with 67).
 * - 66 makes imm16/32 operands 2 bytes, unless REX.W (64-bit operands, still
 *   imm32). REX counts only directly before the opcode: one followed by
 *   another prefix is ignored, but its byte still belongs to the instruction.
 * - c4, c5 (LES, LDS) and 62 (BOUND) are always VEX and EVEX; 8f is XOP when
 *   its next byte's reg field is not 0 (8f /0 is pop). VEX, EVEX and XOP
 *   after 66, f2, f3, f0 or REX raise #UD.
 * - The operand size of near branches (e8, e9, 0f 80-8f) with 66 differs
 *   between vendors: AMD takes a rel16, Intel ignores the 66 and takes a
 *   rel32. No compiler emits it, so it is treated as invalid.
 * An opcode that raises #UD in 64-bit mode is invalid (-1) even where its
 * length would be clear: code that runs never contains one, so meeting one
 * tells the syscall finder that it is decoding data or out of step.
 *
 * Cross-checked against objdump on real binaries by tests/test_x86dec.py.
 */
#include "intercept/x86len.h"

#define MAX_INSN 15

/* What follows an opcode, one character per opcode, so that the maps read
 * like the opcode tables of the manuals (rows are the high nibble):
 *   .  nothing          m  ModRM                 x  invalid in 64-bit mode
 *   b  imm8             B  ModRM, imm8           p  prefix (consumed earlier)
 *   w  imm16            Z  ModRM, imm16/32       s  special, see the code
 *   z  imm16/32 (by operand size)
 *   M  ModRM, memory forms only (mod 3 is #UD)
 *   R  ModRM, register forms only (mod != 3 is #UD)
 *   r  ModRM that always names registers: mov to/from CRn/DRn ignore mod,
 *      so there is never a SIB or displacement. */
static const char map_1[257] =
	/*    0123456789abcdef */
	/*0*/ "mmmmbzxxmmmmbzxs"
	/*1*/ "mmmmbzxxmmmmbzxx"
	/*2*/ "mmmmbzpxmmmmbzpx"
	/*3*/ "mmmmbzpxmmmmbzpx"
	/*4*/ "pppppppppppppppp"
	/*5*/ "................"
	/*6*/ "xxsmppppzZbB...."
	/*7*/ "bbbbbbbbbbbbbbbb"
	/*8*/ "BZxBmmmmmmmmmMms"
	/*9*/ "..........x....."
	/*a*/ "ssss....bz......"
	/*b*/ "bbbbbbbbssssssss"
	/*c*/ "BBw.ssBZs.w..bx."
	/*d*/ "mmmmxxx.mmmmmmmm"
	/*e*/ "bbbbbbbbssxb...."
	/*f*/ "p.pp..ss......mm";

/* 0f xx. 0f 0f is 3DNow!: ModRM, then the opcode as an imm8 suffix. 0f a6
 * and a7 are VIA PadLock (register forms only). */
static const char map_0f[257] =
	/*    0123456789abcdef */
	/*0*/ "mmmmx.....x.xm.B"
	/*1*/ "mmmmmmmmmmmmmmmm"
	/*2*/ "rrrrxxxxmmmmmmmm"
	/*3*/ "......x.sxsxxxxx"
	/*4*/ "mmmmmmmmmmmmmmmm"
	/*5*/ "mmmmmmmmmmmmmmmm"
	/*6*/ "mmmmmmmmmmmmmmmm"
	/*7*/ "BBBBmmm.smxxmmmm"
	/*8*/ "ssssssssssssssss"
	/*9*/ "mmmmmmmmmmmmmmmm"
	/*a*/ "...mBmRR...mBmmm"
	/*b*/ "mmmmmmmmsmBmmmmm"
	/*c*/ "mmBmBBBm........"
	/*d*/ "mmmmmmmmmmmmmmmm"
	/*e*/ "mmmmmmmmmmmmmmmm"
	/*f*/ "mmmmmmmmmmmmmmmm";

/* 0f 38 xx (every one takes a ModRM) and 0f 3a xx (ModRM and imm8): which
 * are defined without VEX, with any mandatory prefix. */
static const char map_0f38[257] =
	/*    0123456789abcdef */
	/*0*/ "mmmmmmmmmmmmxxxx"
	/*1*/ "mxxxmmxmxxxxmmmx"
	/*2*/ "mmmmmmxxmmmmxxxx"
	/*3*/ "mmmmmmxmmmmmmmmm"
	/*4*/ "mmxxxxxxxxxxxxxx"
	/*5*/ "xxxxxxxxxxxxxxxx"
	/*6*/ "xxxxxxxxxxxxxxxx"
	/*7*/ "xxxxxxxxxxxxxxxx"
	/*8*/ "mmmxxxxxxxxxxxxx"
	/*9*/ "xxxxxxxxxxxxxxxx"
	/*a*/ "xxxxxxxxxxxxxxxx"
	/*b*/ "xxxxxxxxxxxxxxxx"
	/*c*/ "xxxxxxxxmmmmmmxm"
	/*d*/ "xxxxxxxxmxxmmmmm"
	/*e*/ "xxxxxxxxxxxxxxxx"
	/*f*/ "mmxxxmmxmmmmmxxx";

static const char map_0f3a[257] =
	/*    0123456789abcdef */
	/*0*/ "xxxxxxxxBBBBBBBB"
	/*1*/ "xxxxBBBBxxxxxxxx"
	/*2*/ "BBBxxxxxxxxxxxxx"
	/*3*/ "xxxxxxxxxxxxxxxx"
	/*4*/ "BBBxBxxxxxxxxxxx"
	/*5*/ "xxxxxxxxxxxxxxxx"
	/*6*/ "BBBBxxxxxxxxxxxx"
	/*7*/ "xxxxxxxxxxxxxxxx"
	/*8*/ "xxxxxxxxxxxxxxxx"
	/*9*/ "xxxxxxxxxxxxxxxx"
	/*a*/ "xxxxxxxxxxxxxxxx"
	/*b*/ "xxxxxxxxxxxxxxxx"
	/*c*/ "xxxxxxxxxxxxBxBB"
	/*d*/ "xxxxxxxxxxxxxxxB"
	/*e*/ "xxxxxxxxxxxxxxxx"
	/*f*/ "Bxxxxxxxxxxxxxxx";

/* Opcodes of VEX/EVEX map 1 (0f) that take an imm8: pshuf*, the shift
 * groups 71-73, cmpps, pinsrw, pextrw, shufps. In map 3 (0f 3a) all do, in
 * maps 2 (0f 38), 5 and 6 none. */
static int map1_imm8(int op)
{
	return (op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6);
}

/* Whether the ModRM byte m names a defined member of the group of opcode op
 * (esc: 0 one-byte map, 1 map 0f); the others raise #UD. Only the groups
 * whose holes compiled code is likely to meet when decoding data. */
static int group_defined(int esc, int op, int m)
{
	int reg = (m >> 3) & 7, mod = m >> 6;
	if (esc == 0 && (op == 0xc6 || op == 0xc7)) /* mov; c6 f8 xabort, c7 f8 xbegin */
		return reg == 0 || m == 0xf8;
	if (esc == 0 && op == 0xfe) /* inc, dec */
		return reg < 2;
	if (esc == 0 && op == 0xff) /* far call/jmp take memory only; /7 is unused */
		return reg != 7 && !(mod == 3 && (reg == 3 || reg == 5));
	if (esc == 1 && op == 0xba) /* bt, bts, btr, btc imm8 are /4 to /7 */
		return reg >= 4;
	if (esc == 1 && op == 0x00) /* sldt .. verw are /0 to /5 */
		return reg < 6;
	return 1;
}

/* Index just past the ModRM operand whose ModRM byte is p[i] (kind as in the
 * maps), or -1. May return more than n: the caller checks the total. */
static int modrm_end(const uint8_t *p, int n, int i, char kind)
{
	if (i >= n)
		return -1;
	int mod = p[i] >> 6, rm = p[i] & 7;
	i++;
	if (kind == 'r')
		return i;
	if (mod == 3)
		return kind == 'M' ? -1 : i;
	if (kind == 'R')
		return -1;
	if (rm == 4) { /* SIB; base 5 with mod 0 means no base, a disp32 */
		if (i >= n)
			return -1;
		if (mod == 0 && (p[i] & 7) == 5)
			i += 4;
		i++;
	} else if (mod == 0 && rm == 5) {
		i += 4; /* RIP-relative */
	}
	if (mod == 1)
		i += 1;
	else if (mod == 2)
		i += 4;
	return i;
}

int zv_x86_insn_len(const uint8_t *p, size_t avail)
{
	int n = avail < MAX_INSN ? (int)avail : MAX_INSN;
	int i, op, rex = 0, any_rex = 0, o16 = 0, a32 = 0, rep = 0, lock = 0;
	int esc = 0; /* 0: one-byte map, 1: map 0f, 2: another map */

	for (i = 0;; i++) {
		if (i >= n)
			return -1;
		op = p[i];
		if ((op & 0xf0) == 0x40) {
			rex = op;
			any_rex = 1;
			continue;
		}
		if (op == 0x66)
			o16 = 1;
		else if (op == 0x67)
			a32 = 1;
		else if (op == 0xf2 || op == 0xf3)
			rep = op;
		else if (op == 0xf0)
			lock = 1;
		else if (op != 0x26 && op != 0x2e && op != 0x36 && op != 0x3e && op != 0x64 && op != 0x65)
			break;
		rex = 0; /* a REX prefix counts only directly before the opcode */
	}
	i++;

	int w = rex & 8;
	int z = o16 && !w ? 2 : 4; /* an imm16/32 */
	int imm = 0;               /* immediate bytes after the ModRM operand */
	char kind = map_1[op];
	int vex_ok = !(o16 || rep || lock || any_rex);

	switch (kind) {
	case '.': kind = 0; break;
	case 'b': kind = 0; imm = 1; break;
	case 'w': kind = 0; imm = 2; break;
	case 'z': kind = 0; imm = z; break;
	case 'B': imm = 1; break;
	case 'Z': imm = z; break;
	case 'm': case 'M': break;
	case 's': break;
	default: return -1;
	}
	if (kind == 's') {
		kind = 'm';
		switch (op) {
		case 0x0f:
			if (i >= n)
				return -1;
			op = p[i++];
			esc = 1;
			if (op == 0x38 || op == 0x3a) {
				esc = 2;
				if (i >= n)
					return -1;
				kind = (op == 0x38 ? map_0f38 : map_0f3a)[p[i++]];
				if (kind == 'x')
					return -1;
				imm = op == 0x3a;
				kind = 'm';
				break;
			}
			kind = map_0f[op];
			switch (kind) {
			case '.': kind = 0; break;
			case 'B': imm = 1; break;
			case 'm': case 'r': case 'R': break;
			case 's':
				if (op >= 0x80 && op <= 0x8f) { /* jcc rel32 */
					if (o16 && !w)
						return -1;
					kind = 0;
					imm = 4;
				} else if (op == 0x78) { /* vmread; with 66/f2 extrq/insertq xmm, imm8, imm8 */
					kind = o16 || rep == 0xf2 ? 'R' : 'm';
					imm = kind == 'R' ? 2 : 0;
				} else if (op == 0xb8) { /* popcnt; without f3 it is jmpe (IA-64 only) */
					if (rep != 0xf3)
						return -1;
					kind = 'm';
				} else {
					return -1;
				}
				break;
			default: return -1;
			}
			break;
		case 0xa0: case 0xa1: case 0xa2: case 0xa3: /* mov to/from moffs: an address */
			kind = 0;
			imm = a32 ? 4 : 8;
			break;
		case 0xb8: case 0xb9: case 0xba: case 0xbb:
		case 0xbc: case 0xbd: case 0xbe: case 0xbf: /* mov imm16/32/64 to a register */
			kind = 0;
			imm = w ? 8 : z;
			break;
		case 0xc8: /* enter imm16, imm8 */
			kind = 0;
			imm = 3;
			break;
		case 0xe8: case 0xe9: /* call, jmp rel32 */
			if (o16 && !w)
				return -1;
			kind = 0;
			imm = 4;
			break;
		case 0xf6: case 0xf7: /* group 3: only test (/0, and its alias /1) has an immediate */
			if (i >= n)
				return -1;
			if (((p[i] >> 3) & 7) < 2)
				imm = op == 0xf6 ? 1 : z;
			break;
		case 0x8f: /* pop r/m (reg 0), or XOP */
			if (i >= n)
				return -1;
			if (((p[i] >> 3) & 7) == 0)
				break;
			if (!vex_ok || i + 2 >= n)
				return -1;
			esc = 2;
			op = p[i] & 0x1f; /* the map: 8 has an imm8, 9 none, a an imm32 */
			if (op < 8 || op > 10)
				return -1;
			imm = op == 8 ? 1 : op == 9 ? 0 : 4;
			i += 3;
			break;
		case 0xc4: case 0xc5: { /* VEX: 3 bytes (any map) or 2 (map 1) */
			int map = 1;
			if (!vex_ok)
				return -1;
			esc = 2;
			if (op == 0xc4) {
				if (i + 2 >= n)
					return -1;
				map = p[i] & 0x1f;
				op = p[i + 2];
				i += 3;
			} else {
				if (i + 1 >= n)
					return -1;
				op = p[i + 1];
				i += 2;
			}
			if (map == 1 && op == 0x77) /* vzeroupper, vzeroall: no ModRM */
				kind = 0;
			else if (map == 1)
				imm = map1_imm8(op);
			else if (map == 3)
				imm = 1;
			else if (map != 2)
				return -1;
			break;
		}
		case 0x62: { /* EVEX: 62 P0 P1 P2 opcode ModRM */
			if (!vex_ok || i + 3 >= n)
				return -1;
			esc = 2;
			int p0 = p[i], p1 = p[i + 1], map = p0 & 7;
			/* P0 bit 3 is reserved (0) and P1 bit 2 fixed (1) */
			if ((p0 & 0x08) || !(p1 & 0x04))
				return -1;
			op = p[i + 3];
			i += 4;
			if (map == 1)
				imm = map1_imm8(op);
			else if (map == 3)
				imm = 1;
			else if (map != 2 && map != 5 && map != 6)
				return -1;
			break;
		}
		default:
			return -1;
		}
	}
	if (kind) {
		if (i < n && !group_defined(esc, op, p[i]))
			return -1;
		i = modrm_end(p, n, i, kind);
		if (i < 0)
			return -1;
	}
	i += imm;
	return i <= n ? i : -1;
}

/* ---------------------------------------------------------------------------
 * Finding syscall sites.
 *
 * A linear sweep decodes one instruction after another. It is right as long
 * as the region is code and the sweep started on an instruction boundary;
 * embedded data (jump tables, constants and padding in hand-written code, an
 * ELF header at the start of a segment) can put it out of step, and out of
 * step, 0f 05 inside a displacement or an immediate would look like a
 * syscall. Reporting one that is not would corrupt the program, missing one
 * only costs a SIGSYS later (the catch-all rewrites it then), so:
 *
 * 1. Resynchronisation by convergence. At the start of the region and after
 *    an undecodable instruction at offset b, the sweep does not guess where
 *    code resumes. It starts one decoding at each of the offsets
 *    b+1 .. b+RESYNC_WINDOW and advances them until all that are still alive
 *    meet at one offset; it continues from there. A decoding that meets an
 *    invalid opcode is dropped: it cannot be the one that follows the real
 *    instructions. Why this is right: if code resumes at or before b+1,
 *    one of these offsets is a real boundary (no instruction is longer than
 *    15 bytes), and the decoding from a real boundary stays on real
 *    boundaries, so the meeting point is one. (x86 decodings converge within
 *    a few instructions, so this costs little.) If every decoding dies,
 *    there is no code in the window, and the next window is tried.
 * 2. Confirmation. A syscall found after the meeting point is kept only once
 *    CONFIRM_AFTER further instructions have decoded (or the region ended
 *    cleanly after it): an invalid opcode soon after shows that the sweep
 *    was in data, and the sites since the last confirmation are dropped.
 *    Real code follows a syscall with ordinary instructions (a compare, a
 *    ret) and rarely with data.
 *
 * What it cannot know: data that decodes as valid instructions all the way
 * through. The caller should give regions that are code (the executable
 * segments of ELF files); tests/test_x86dec.py measures the rule on real
 * binaries against objdump and on data.
 */
#define RESYNC_WINDOW 15
#define CONFIRM_BEFORE 4
#define CONFIRM_AFTER 4

/* Whether the instruction at p (len bytes) is one that user code does not
 * execute but data often decodes to: port I/O, cli/sti, int1 and
 * instructions that fault outside ring 0. */
static int implausible(const uint8_t *p, int len)
{
	int i = 0;
	while (i < len - 1 && ((p[i] & 0xf0) == 0x40 || p[i] == 0x66 || p[i] == 0x67 ||
			       p[i] == 0xf0 || p[i] == 0xf2 || p[i] == 0xf3 || p[i] == 0x2e ||
			       p[i] == 0x36 || p[i] == 0x3e || p[i] == 0x26 || p[i] == 0x64 || p[i] == 0x65))
		i++;
	int op = p[i];
	if (op == 0x0f && i + 1 < len) {
		op = p[i + 1];
		/* clts, sysret, invd, wbinvd, mov to/from CRn/DRn, wrmsr, rdmsr, sysexit */
		return op == 0x06 || op == 0x07 || op == 0x08 || op == 0x09 ||
		       (op >= 0x20 && op <= 0x23) || op == 0x30 || op == 0x32 || op == 0x35;
	}
	/* ins, outs, in, out, int1, cli, sti */
	return (op >= 0x6c && op <= 0x6f) || (op >= 0xe4 && op <= 0xe7) || (op >= 0xec && op <= 0xef) ||
	       op == 0xf1 || op == 0xfa || op == 0xfb;
}

/* The length of the instruction at p, or -1 if it is invalid or one that
 * only data decodes to. */
static int step(const uint8_t *p, size_t avail)
{
	int l = zv_x86_insn_len(p, avail);
	return l > 0 && !implausible(p, l) ? l : -1;
}

/* Offset >= start at which the sweep can continue in step, or len. */
static size_t resync(const uint8_t *code, size_t len, size_t start)
{
	size_t pos[RESYNC_WINDOW];

	while (start < len) {
		size_t dead = start; /* the furthest offset where a decoding died */
		int live = 0;
		for (int k = 0; k < RESYNC_WINDOW && start + k < len; k++)
			pos[live++] = start + k;
		while (live > 0) {
			/* Advance the decoding furthest behind: the others are then
			 * all within 15 bytes of it, and they meet as soon as one
			 * lands where another stands. */
			int lo = 0, same = 1;
			for (int k = 1; k < live; k++) {
				same &= pos[k] == pos[0];
				if (pos[k] < pos[lo])
					lo = k;
			}
			if (same)
				return pos[0];
			int l = step(code + pos[lo], len - pos[lo]);
			if (l < 0) {
				if (pos[lo] > dead)
					dead = pos[lo];
				pos[lo] = pos[--live];
				continue;
			}
			size_t next = pos[lo] + l;
			if (next >= len)
				return len; /* no agreement before the end */
			int met = 0;
			for (int k = 0; k < live; k++)
				met |= pos[k] == next;
			if (met)
				pos[lo] = pos[--live];
			else
				pos[lo] = next;
		}
		/* No code starts in the window. The next one starts past every
		 * place a decoding reached, which keeps the work linear: no offset
		 * is decoded by more than RESYNC_WINDOW decodings. */
		start = dead + 1;
	}
	return len;
}

int zv_x86_find_syscalls(const uint8_t *code, size_t len, uint64_t base, uint64_t *out, int max)
{
	int found = 0;   /* confirmed sites in out[] */
	int pending = 0; /* unconfirmed sites after them */
	int before = 0;  /* instructions decoded since the meeting point */
	int after = 0;   /* instructions decoded since the last pending site */
	size_t off;

	if (max <= 0)
		return 0;
	off = resync(code, len, 0);
	while (off < len) {
		int l = step(code + off, len - off);
		if (l < 0) {
			pending = 0;
			before = 0;
			off = resync(code, len, off + 1);
			continue;
		}
		if (l == 2 && code[off] == 0x0f && code[off + 1] == 0x05) {
			if (before >= CONFIRM_BEFORE && found + pending < max)
				out[found + pending++] = base + off;
			after = 0;
		} else if (pending && ++after >= CONFIRM_AFTER) {
			found += pending;
			pending = 0;
			if (found == max)
				return found;
		}
		before++;
		off += l;
	}
	return found + pending; /* the region ended cleanly */
}
