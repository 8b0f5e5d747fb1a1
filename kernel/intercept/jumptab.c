/* Jump tables: where a function's indirect jumps may land (DESIGN "Jump stubs and SUD off").
 *
 * A window may not hold a branch target after its first instruction, so a
 * function with an indirect jump got no windows: its targets were unknown.
 * A `switch` as GCC compiles it (PIE or not) has a shape whose targets the
 * code itself proves:
 *
 *      cmp $N, %I ; ja default       (or jae)
 *      ...                           (only tests, jumps out, leas into
 *                                     other registers, mov %eI, %eI)
 *      movslq (%B,%I,4), %X
 *      add %B, %X                    (either encoding)
 *      jmp *%X                       (notrack too)
 *
 * The bound gives the table's size: N + 1 entries after ja, N after jae,
 * and no branch of the function lands between the cmp and the jump, so
 * every way to the jump passes the check. The table's base B is computed elsewhere
 * (hoisted out of loops, kept in a callee-saved register or spilled), but
 * a jump table is a local label of its function: the only code that forms
 * its address is a rip-relative `lea` of the function itself. So every
 * such lea's address, read as a table of the jump's size, is marked: what
 * is not a table only adds targets, which can cost a window but never make
 * a wrong one. Entries outside the function (a split function's cold part)
 * are not its concern. Any other indirect jump (a tail call through a
 * pointer) leaves the function unjudged, as before. */
#include "intercept/jumptab.h"

#define MAX_STEPS 8      /* instructions between the bound check and the load */
#define MAX_ENTRIES 4096 /* a larger bound is not believed */

static int bit(const uint8_t *m, uint64_t i) { return m[i >> 3] >> (i & 7) & 1; }
static void set_bit(uint8_t *m, uint64_t i) { m[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* The instruction start before offset off, or -1. */
static long before(const uint8_t *starts, long off)
{
	while (--off >= 0)
		if (bit(starts, (uint64_t)off))
			return off;
	return -1;
}

/* An instruction [p, p + l) split into its REX byte and what follows;
 * notrack (3e) is accepted only where allowed. Returns the opcode's index,
 * or -1. */
static int opcode_at(const uint8_t *p, int l, int notrack_ok, int *rex)
{
	int i = 0;
	*rex = 0;
	if (notrack_ok && i < l && p[i] == 0x3e)
		i++;
	if (i < l && (p[i] & 0xf0) == 0x40)
		*rex = p[i++];
	return i < l ? i : -1;
}

static int reg_field(int modrm, int rex) { return ((modrm >> 3) & 7) | (rex & 4) << 1; }
static int rm_field(int modrm, int rex) { return (modrm & 7) | (rex & 1) << 3; }

/* `cmp $imm, %I` (any width but a byte); the register, or -1. */
static int cmp_imm(const uint8_t *p, int l, long *imm)
{
	int rex, i = opcode_at(p, l, 0, &rex);
	if (i < 0)
		return -1;
	if (p[i] == 0x3d && l == i + 5 && !(rex & 1)) {
		*imm = (int32_t)(p[i + 1] | p[i + 2] << 8 | p[i + 3] << 16 | (uint32_t)p[i + 4] << 24);
		return 0;
	}
	if ((p[i] != 0x83 && p[i] != 0x81) || l < i + 3 || (p[i + 1] & 0xf8) != 0xf8)
		return -1; /* mod 11, reg 7 */
	if (p[i] == 0x83 && l == i + 3)
		*imm = (int8_t)p[i + 2];
	else if (p[i] == 0x81 && l == i + 6)
		*imm = (int32_t)(p[i + 2] | p[i + 3] << 8 | p[i + 4] << 16 | (uint32_t)p[i + 5] << 24);
	else
		return -1;
	return rm_field(p[i + 1], rex);
}

/* ja (1) or jae (0) rel8/rel32; -1 for anything else. */
static int ja_kind(const uint8_t *p, int l)
{
	int op = l == 2 ? p[0] : l == 6 && p[0] == 0x0f ? p[1] - 0x10 : -1;
	return op == 0x77 ? 1 : op == 0x73 ? 0 : -1;
}

/* A memory operand [p, p + n) of an instruction, from its ModRM byte on,
 * with the REX bits that extend it: the same bytes name the same address
 * while its registers keep their values. Not rip-relative (two
 * instructions name one address with different bytes). */
struct memop {
	uint8_t bytes[7]; /* ModRM (reg field cleared), SIB, displacement */
	int n, rex_xb, base, index;
};

/* The memory operand whose ModRM byte is p[i] (rex: the instruction's
 * REX), if it is one; then returns the index after it. */
static int mem_operand(const uint8_t *p, int l, int i, int rex, struct memop *m)
{
	if (i >= l || (p[i] >> 6) == 3)
		return -1;
	int mod = p[i] >> 6, rm = p[i] & 7, j = i + 1, disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;
	m->base = rm | (rex & 1) << 3;
	m->index = 4;
	if (rm == 4) {
		if (j >= l)
			return -1;
		int sib = p[j++];
		m->base = (sib & 7) | (rex & 1) << 3;
		m->index = ((sib >> 3) & 7) | (rex & 2) << 2;
		if ((sib & 7) == 5 && mod == 0) {
			m->base = -1; /* disp32, no base */
			disp = 4;
		}
	} else if (rm == 5 && mod == 0) {
		return -1; /* rip-relative */
	}
	if (j + disp > l || j + disp - i > (int)sizeof m->bytes)
		return -1;
	m->n = j + disp - i;
	for (int k = 0; k < m->n; k++)
		m->bytes[k] = p[i + k];
	m->bytes[0] &= 0xc7;
	m->rex_xb = rex & 3;
	if (m->index == 4)
		m->index = -1;
	return j + disp;
}

static int same_mem(const struct memop *a, const struct memop *b)
{
	if (a->n != b->n || a->rex_xb != b->rex_xb)
		return 0;
	for (int k = 0; k < a->n; k++)
		if (a->bytes[k] != b->bytes[k])
			return 0;
	return 1;
}

/* `cmp $imm, M` of 32 or 64 bits (*wide); 0 if it is one. */
static int cmp_imm_mem(const uint8_t *p, int l, const struct memop *m, long *imm, int *wide)
{
	int rex, i = opcode_at(p, l, 0, &rex);
	struct memop c;
	if (i < 0 || (p[i] != 0x83 && p[i] != 0x81) || i + 1 >= l || ((p[i + 1] >> 3) & 7) != 7)
		return -1;
	int e = mem_operand(p, l, i + 1, rex, &c);
	if (e < 0 || !same_mem(&c, m))
		return -1;
	if (p[i] == 0x83 && l == e + 1)
		*imm = (int8_t)p[e];
	else if (p[i] == 0x81 && l == e + 4)
		*imm = (int32_t)(p[e] | p[e + 1] << 8 | p[e + 2] << 16 | (uint32_t)p[e + 3] << 24);
	else
		return -1;
	*wide = (rex & 8) != 0;
	return 0;
}

/* `mov M, %eI` (or %rI, *wide): M, if it is that load. */
static int load_of(const uint8_t *p, int l, int I, struct memop *m, int *wide)
{
	int rex, i = opcode_at(p, l, 0, &rex);
	if (i < 0 || p[i] != 0x8b || i + 1 >= l || reg_field(p[i + 1], rex) != I || mem_operand(p, l, i + 1, rex, m) != l)
		return -1;
	*wide = (rex & 8) != 0;
	return 0;
}

/* The register a `mov %r, %r` or `lea` writes (neither changes flags or
 * memory), or -1 if it is neither. */
static int move_dest(const uint8_t *p, int l)
{
	int rex, i = opcode_at(p, l, 0, &rex);
	if (i < 0 || i + 1 >= l)
		return -1;
	if ((p[i] == 0x89 || p[i] == 0x8b) && l == i + 2 && (p[i + 1] >> 6) == 3)
		return p[i] == 0x89 ? rm_field(p[i + 1], rex) : reg_field(p[i + 1], rex);
	if (p[i] == 0x8d && (p[i + 1] >> 6) != 3)
		return reg_field(p[i + 1], rex);
	return -1;
}

/* Whether the instruction leaves the bounded value alone: register I's
 * (m NULL), or memory operand m's, whose registers it must not write, nor
 * any memory. A test or compare, a conditional jump (its taken side leaves
 * the path), a move or lea into another register, or mov %eI, %eI. */
static int keeps(const uint8_t *p, int l, int I, const struct memop *m)
{
	int rex, i = opcode_at(p, l, 0, &rex), op = i >= 0 ? p[i] : -1;
	if (op < 0)
		return 0;
	if ((op >= 0x70 && op <= 0x7f && l == 2) || (op == 0x0f && l == 6 && p[1] >= 0x80 && p[1] <= 0x8f && !rex))
		return 1;
	if (op == 0x84 || op == 0x85 || (op >= 0x38 && op <= 0x3d))
		return 1;
	if ((op == 0x80 || op == 0x81 || op == 0x83) && i + 1 < l && ((p[i + 1] >> 3) & 7) == 7)
		return 1;
	int d = move_dest(p, l);
	if (m)
		return d >= 0 && d != m->base && d != m->index;
	if (d >= 0 && d != I)
		return 1;
	if ((op == 0x89 || op == 0x8b) && l == i + 2 && (p[i + 1] >> 6) == 3 && !(rex & 8))
		return reg_field(p[i + 1], rex) == I && rm_field(p[i + 1], rex) == I;
	return 0;
}

/* The bound on index register I checked before the instruction at from:
 * the number of table entries it allows, or -1; *check: the cmp's offset.
 * The check is `cmp $N, %I`, or `cmp $N, M` with I loaded from M after it
 * (`mov M, %eI`: the value compared, as long as nothing in between writes
 * memory or M's registers; another thread's write there would be a data
 * race in the program, which the compiler's own code assumes away too);
 * between the cmp and its ja only moves that keep the flags. */
static long bound(const uint8_t *code, const uint8_t *starts, long from, int I, long *check)
{
	long q = from, next = from;
	struct memop m, *mp = 0;
	int load_wide = 0;
	for (int step = 0; step < MAX_STEPS; step++, next = q) {
		if ((q = before(starts, q)) < 0)
			return -1;
		int l = (int)(next - q), above = ja_kind(code + q, l);
		if (above >= 0) {
			for (long c = q, cn = q, k = 0; k < 4; k++, cn = c) {
				long imm;
				int wide;
				if ((c = before(starts, c)) < 0)
					return -1;
				int cl = (int)(cn - c), d = move_dest(code + c, cl);
				if (mp ? cmp_imm_mem(code + c, cl, mp, &imm, &wide) == 0 && (wide || !load_wide)
				       : cmp_imm(code + c, cl, &imm) == I) {
					if (imm < 0 || imm >= MAX_ENTRIES)
						return -1;
					*check = c;
					return imm + above;
				}
				if (d < 0 || d == I || (mp && (d == mp->base || d == mp->index)))
					return -1;
			}
			return -1;
		}
		if (!mp && load_of(code + q, l, I, &m, &load_wide) == 0) {
			mp = &m; /* from here back, the bound is on M */
			continue;
		}
		if (!keeps(code + q, l, I, mp))
			return -1;
	}
	return -1;
}

/* jmp *%X: X, or -1. */
static int jmp_reg(const uint8_t *p, int l)
{
	int rex, i = opcode_at(p, l, 1, &rex);
	if (i < 0 || p[i] != 0xff || l != i + 2 || (p[i + 1] & 0xf8) != 0xe0 || (rex & 0x0e))
		return -1;
	return rm_field(p[i + 1], rex);
}

/* add %B, %X (64-bit, either encoding): B, given X; -1 otherwise. */
static int add_base(const uint8_t *p, int l, int X)
{
	int rex, i = opcode_at(p, l, 0, &rex);
	if (i < 0 || !(rex & 8) || l != i + 2 || (p[i] != 0x01 && p[i] != 0x03) || (p[i + 1] >> 6) != 3)
		return -1;
	int reg = reg_field(p[i + 1], rex), rm = rm_field(p[i + 1], rex);
	if (p[i] == 0x01)
		return rm == X ? reg : -1;
	return reg == X ? rm : -1;
}

/* movslq (%B,%I,4), %X: I, given B and X; -1 otherwise. */
static int load_index(const uint8_t *p, int l, int B, int X)
{
	int rex, i = opcode_at(p, l, 0, &rex);
	if (i < 0 || !(rex & 8) || p[i] != 0x63 || l < i + 3)
		return -1;
	int m = p[i + 1], s = p[i + 2], mod = m >> 6;
	if ((m & 7) != 4 || reg_field(m, rex) != X || (s >> 6) != 2)
		return -1; /* SIB, scale 4 */
	if (!((mod == 0 && (s & 7) != 5 && l == i + 3) || (mod == 1 && l == i + 4 && p[i + 3] == 0)))
		return -1; /* no displacement */
	int base = (s & 7) | (rex & 1) << 3, index = ((s >> 3) & 7) | (rex & 2) << 2;
	return base == B && index != 4 ? index : -1;
}

/* Marks the in-function targets of n entries at table, each relative to
 * the table. */
static void mark(uint64_t table, long n, uint64_t at, uint64_t len, uint8_t *targets, zv_image_reader read, void *ctx)
{
	for (long k = 0; k < n; k++) {
		int32_t v;
		if (read(ctx, table + (uint64_t)k * 4, &v, 4))
			return; /* not (all) in the image: no table of this size */
		uint64_t t = table + (uint64_t)(int64_t)v;
		if (t >= at && t - at < len)
			set_bit(targets, t - at);
	}
}

int zv_jumptab_mark(const uint8_t *code, uint64_t len, uint64_t at, const uint8_t *starts, uint8_t *targets,
		    const uint32_t *ij, int nij, const uint64_t *leas, int nleas, zv_image_reader read, void *ctx)
{
	long checks[16];
	if (!read || nij > 16)
		return -1;
	for (int k = 0; k < nij; k++) {
		long j = ij[k], next;
		for (next = j + 1; (uint64_t)next < len && !bit(starts, (uint64_t)next); next++)
			;
		int I, X = jmp_reg(code + j, (int)(next - j));
		if (X < 0)
			return -1; /* through a pointer or memory: targets unknown */
		long a = before(starts, j), m = a >= 0 ? before(starts, a) : -1, n;
		int B = a >= 0 ? add_base(code + a, (int)(j - a), X) : -1;
		if (B < 0 || m < 0 || (I = load_index(code + m, (int)(a - m), B, X)) < 0 || I == B ||
		    (n = bound(code, starts, m, I, &checks[k])) < 0)
			return -1;
		for (int c = 0; c < nleas; c++)
			mark(leas[c], n, at, len, targets, read, ctx);
	}
	/* Every way to each jump passes its check: nothing lands after it. */
	for (int k = 0; k < nij; k++)
		for (uint64_t o = (uint64_t)checks[k] + 1; o <= ij[k]; o++)
			if (bit(targets, o))
				return -1;
	return 0;
}
