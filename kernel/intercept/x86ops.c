/* What the red-zone check needs to know of an instruction beyond its length
 * (intercept/x86len.c): its memory operand, its effect on control flow and
 * on rsp. Where an encoding is not understood here the answers lean to the
 * safe side: a memory operand is assumed, control flow is "other". */
#include "intercept/x86len.h"
#include "intercept/x86ops.h"

/* One-byte opcodes without a ModRM byte (bit set). */
static const uint32_t map1_no_modrm[8] = {
	/* 00-1f: the ALU al/eax,imm forms and the invalid push/pop segs */
	(1u << 0x04) | (1u << 0x05) | (1u << 0x06) | (1u << 0x07) | (1u << 0x0c) | (1u << 0x0d) |
		(1u << 0x0e) | (1u << 0x14) | (1u << 0x15) | (1u << 0x16) | (1u << 0x17) | (1u << 0x1c) |
		(1u << 0x1d) | (1u << 0x1e) | (1u << 0x1f),
	/* 20-3f */
	(1u << 0x04) | (1u << 0x05) | (1u << 0x07) | (1u << 0x0c) | (1u << 0x0d) | (1u << 0x0f) |
		(1u << 0x14) | (1u << 0x15) | (1u << 0x17) | (1u << 0x1c) | (1u << 0x1d) | (1u << 0x1f),
	/* 40-5f: push/pop reg */
	0xffff0000u,
	/* 60-7f: push imm, jcc rel8, in/outs */
	(1u << 0x08) | (1u << 0x0a) | (1u << 0x0c) | (1u << 0x0d) | (1u << 0x0e) | (1u << 0x0f) | 0xffff0000u,
	/* 80-9f: nop/xchg, cbw..lahf */
	0xffff0000u,
	/* a0-bf: moffs, string ops, test imm, mov reg,imm */
	0xffffffffu & ~0u,
	/* c0-df: ret imm/ret, enter/leave, retf, int3, int, iret */
	(1u << 0x02) | (1u << 0x03) | (1u << 0x08) | (1u << 0x09) | (1u << 0x0a) | (1u << 0x0b) |
		(1u << 0x0c) | (1u << 0x0d) | (1u << 0x0e) | (1u << 0x0f) | (1u << 0x17),
	/* e0-ff: loop/jcxz, in/out, call/jmp rel, hlt, cmc, clc..std */
	0x0000ffffu | (1u << 0x14) | (1u << 0x15) | (1u << 0x18) | (1u << 0x19) | (1u << 0x1a) |
		(1u << 0x1b) | (1u << 0x1c) | (1u << 0x1d),
};

static int map1_has_modrm(int op)
{
	return !(map1_no_modrm[op >> 5] & (1u << (op & 31)));
}

/* Two-byte (0f) opcodes without a ModRM byte. */
static int map0f_has_modrm(int op)
{
	if ((op >= 0x80 && op <= 0x8f) || (op >= 0xc8 && op <= 0xcf))
		return 0; /* jcc rel32, bswap */
	switch (op) {
	case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0b: case 0x0e: case 0x30:
	case 0x31: case 0x32: case 0x33: case 0x34: case 0x35: case 0x37: case 0x77: case 0xa0:
	case 0xa1: case 0xa2: case 0xa8: case 0xa9: case 0xaa:
		return 0;
	default:
		return 1;
	}
}

static void memory_operand(const uint8_t *m, int rex, struct zv_x86_insn *out)
{
	int mod = m[0] >> 6, rm = m[0] & 7;
	if (mod == 3)
		return;
	out->has_mem = 1;
	out->index = -1;
	const uint8_t *d = m + 1;
	if (rm == 4) {
		int sib = m[1], base = sib & 7, index = ((sib >> 3) & 7) | ((rex & 2) << 2);
		d++;
		if (index != 4)
			out->index = index;
		if (mod == 0 && base == 5) {
			out->base = -1; /* no base: disp32 */
			out->disp = (int32_t)(d[0] | d[1] << 8 | d[2] << 16 | (uint32_t)d[3] << 24);
			return;
		}
		out->base = base | ((rex & 1) << 3);
	} else if (mod == 0 && rm == 5) {
		out->base = ZV_X86_RIP;
		return;
	} else {
		out->base = rm | ((rex & 1) << 3);
	}
	if (mod == 1)
		out->disp = (int8_t)d[0];
	else if (mod == 2)
		out->disp = (int32_t)(d[0] | d[1] << 8 | d[2] << 16 | (uint32_t)d[3] << 24);
}

/* Whether a one-byte or 0f opcode (map 1 or 2) with ModRM m copies the value
 * of rsp (or an address computed from it) into another register or into
 * memory: mov %rsp,%rbp, lea -8(%rsp),%rsi, push %rsp, xchg, cmov... Only
 * the general-register forms that can hold a whole pointer count; 8- and
 * 16-bit forms, VEX/EVEX encodings (BMI) and bit tests are not followed.
 * The red-zone check at load (redzone.c) relies on this: in a function
 * that never does it, no register but rsp can point into its red zone.
 * lea with a displacement >= 0 from rsp alone (a local in the frame, the
 * stack arguments of va_start) is not counted: it points at or above rsp,
 * and could only come to lie below it once the frame is freed, when no
 * correct code uses it any more. */
static int copies_rsp(int map, int op, int rex, const uint8_t *m, const struct zv_x86_insn *in)
{
	if (map == 1 && !m) {
		if ((op == 0x54 || op == 0x94) && !(rex & 1))
			return 1; /* push %rsp, xchg %rsp,%rax */
		return op == 0xc8; /* enter: rbp = rsp */
	}
	if (!m)
		return 0;
	int mod = m[0] >> 6;
	int reg = ((m[0] >> 3) & 7) | ((rex & 4) << 1);
	int rm_rsp = mod == 3 && (m[0] & 7) == 4 && !(rex & 1); /* the r/m operand is rsp */
	if (map == 1) {
		if (op == 0x8d)
			return in->has_mem && (in->base == 4 || in->index == 4) && reg != 4 &&
			       !(in->base == 4 && in->index < 0 && in->disp >= 0); /* lea */
		switch (op) {
		case 0x01: case 0x09: case 0x11: case 0x19: case 0x21: case 0x29: case 0x31: case 0x89:
			return reg == 4 && !rm_rsp; /* op %rsp, r/m */
		case 0x87:
			return (reg == 4) != rm_rsp; /* xchg */
		case 0x03: case 0x0b: case 0x13: case 0x1b: case 0x23: case 0x2b: case 0x33: case 0x8b:
		case 0x63: case 0x69: case 0x6b:
			return rm_rsp && reg != 4; /* op %rsp, reg */
		case 0xff:
			return rm_rsp && reg == 6; /* push %rsp */
		default:
			return 0;
		}
	}
	/* 0f: cmov, imul, bsf/bsr, popcnt, movd/movq to xmm read r/m;
	 * cmpxchg and xadd write reg into r/m */
	if ((op >= 0x40 && op <= 0x4f) || op == 0xaf || op == 0xbc || op == 0xbd || op == 0xb8 || op == 0x6e)
		return rm_rsp;
	if (op == 0xb1 || op == 0xc1)
		return reg == 4 || rm_rsp;
	return 0;
}

/* How many bytes the memory operand of a one-byte or 0f opcode (map 1 or
 * 2) may span: 8 for the general-register instructions, none for lea and
 * nop, 64 (an AVX-512 vector) for what is not sorted out here; x87 state
 * (fsave) spans 108. */
static int operand_width(int map, int op)
{
	if (map == 1) {
		if (op == 0x8d)
			return 0; /* lea */
		return op >= 0xd8 && op <= 0xdf ? 128 : 8;
	}
	if (map == 2) {
		if (op == 0x1f || op == 0x18)
			return 0; /* nop r/m, prefetch */
		if ((op >= 0x40 && op <= 0x4f) || (op >= 0x90 && op <= 0x9f) || op == 0xaf || op == 0xb6 ||
		    op == 0xb7 || op == 0xbe || op == 0xbf)
			return 8; /* cmov, setcc, imul, movzx, movsx */
	}
	return 64;
}

static int32_t rel_at(const uint8_t *p, int len, int size)
{
	const uint8_t *r = p + len - size;
	if (size == 1)
		return (int8_t)r[0];
	return (int32_t)(r[0] | r[1] << 8 | r[2] << 16 | (uint32_t)r[3] << 24);
}

int zv_x86_decode(const uint8_t *p, size_t avail, struct zv_x86_insn *out)
{
	int len = zv_x86_insn_len(p, avail);
	*out = (struct zv_x86_insn){ .len = len, .base = -1, .index = -1 };
	if (len < 0)
		return -1;
	int i = 0, rex = 0;
	for (;; i++) {
		int b = p[i];
		if ((b & 0xf0) == 0x40) {
			rex = b;
			continue;
		}
		if (b != 0x66 && b != 0x67 && b != 0xf2 && b != 0xf3 && b != 0xf0 && b != 0x26 && b != 0x2e &&
		    b != 0x36 && b != 0x3e && b != 0x64 && b != 0x65)
			break;
		rex = 0;
	}
	int op = p[i], map = 1;
	const uint8_t *modrm = NULL;
	if (op == 0xc4 || op == 0xc5 || op == 0x62) {
		map = 0; /* not followed by copies_rsp */
		/* VEX/EVEX: a ModRM always follows the opcode byte. The inverted
		 * register extension bits are ignored: a base of r12/r13 reads
		 * as rsp/rbp, which only errs on the safe side. */
		int prefix = op == 0xc5 ? 2 : op == 0xc4 ? 3 : 4;
		modrm = p + i + prefix + 1;
		rex = 0;
	} else if (op == 0x0f) {
		int op2 = p[i + 1];
		map = op2 == 0x38 || op2 == 0x3a || op2 == 0x0f ? 0 : 2;
		op = op2;
		if (op2 == 0x38 || op2 == 0x3a)
			modrm = p + i + 3;
		else if (op2 == 0x0f)
			modrm = p + i + 2; /* 3DNow! */
		else if (map0f_has_modrm(op2))
			modrm = p + i + 2;
		if (op2 >= 0x80 && op2 <= 0x8f) {
			out->flow = ZV_X86_JCC;
			out->rel = rel_at(p, len, 4);
		}
	} else {
		if (map1_has_modrm(op))
			modrm = p + i + 1;
		if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
			out->flow = ZV_X86_JCC;
			out->rel = rel_at(p, len, 1);
		} else if (op == 0xeb || op == 0xe9) {
			out->flow = ZV_X86_JMP;
			out->rel = rel_at(p, len, op == 0xeb ? 1 : 4);
		} else if (op == 0xe8) {
			out->flow = ZV_X86_CALL;
		} else if (op == 0xc3 || op == 0xc2 || op == 0xcb || op == 0xca || op == 0xcf) {
			out->flow = ZV_X86_RET;
		} else if (op == 0xff && modrm) {
			int reg = (modrm[0] >> 3) & 7;
			if (reg == 2 || reg == 3)
				out->flow = ZV_X86_CALL;
			else if (reg == 4 || reg == 5)
				out->flow = ZV_X86_JMP_INDIRECT;
			else if (reg == 6)
				out->rsp_change = -8, out->pushes = 1; /* push r/m */
		} else if (op >= 0x50 && op <= 0x57) {
			out->rsp_change = -8, out->pushes = 1;
		} else if (op >= 0x58 && op <= 0x5f) {
			out->rsp_change = (op & 7) == 4 && !(rex & 1) ? ZV_X86_RSP_UNKNOWN : 8;
		} else if (op == 0x68 || op == 0x6a || op == 0x9c) {
			out->rsp_change = -8, out->pushes = 1;
		} else if (op == 0x9d || op == 0x8f) {
			out->rsp_change = 8;
		} else if (op == 0xc9 || op == 0xc8) {
			out->rsp_change = ZV_X86_RSP_UNKNOWN; /* leave, enter */
		} else if ((op == 0x83 || op == 0x81) && modrm && (rex & 8) && modrm[0] >> 6 == 3 &&
			   (modrm[0] & 7) == 4 && !(rex & 1)) {
			/* add/sub $imm, %rsp */
			int reg = (modrm[0] >> 3) & 7;
			long imm = op == 0x83 ? (int8_t)modrm[1]
					      : (int32_t)(modrm[1] | modrm[2] << 8 | modrm[3] << 16 | (uint32_t)modrm[4] << 24);
			out->rsp_change = reg == 0 ? imm : reg == 5 ? -imm : ZV_X86_RSP_UNKNOWN;
		} else if (modrm && modrm[0] >> 6 == 3 && (modrm[0] & 7) == 4 && !(rex & 1) &&
			   (op == 0x89 || op == 0x8b || op == 0x8d || op == 0x87 || op == 0x01 || op == 0x29 ||
			    op == 0x31 || op == 0x21 || op == 0x09)) {
			out->rsp_change = ZV_X86_RSP_UNKNOWN; /* rsp written another way */
		} else if (modrm && op == 0x8b && ((modrm[0] >> 3) & 7) == 4 && !(rex & 4)) {
			out->rsp_change = ZV_X86_RSP_UNKNOWN; /* mov m, %rsp */
		} else if (modrm && op == 0x8d && ((modrm[0] >> 3) & 7) == 4 && !(rex & 4)) {
			out->rsp_change = ZV_X86_RSP_UNKNOWN; /* lea m, %rsp */
		}
	}
	if (modrm)
		memory_operand(modrm, rex, out);
	if (out->has_mem && out->base == ZV_X86_RIP) {
		out->disp_at = (int)(modrm - p) + 1; /* rip-relative: no SIB, disp32 next */
		out->disp = (int32_t)(modrm[1] | modrm[2] << 8 | modrm[3] << 16 | (uint32_t)modrm[4] << 24);
	}
	out->width = operand_width(map, op);
	if (map)
		out->exposes_rsp = copies_rsp(map, op, rex, modrm, out);
	return len;
}
