/* Jump stubs' windows (intercept/stubs.c explains stubs and windows): the
 * decode of one function at a time, the instructions before each of its
 * syscalls that move into a stub, and trampolines in dead padding for a
 * syscall with no such room; the batch that holds them until
 * zv_stubs_commit writes the stubs. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/stubs.h"
#include "intercept/x86ops.h"

#define MAX_WINDOWS 8192 /* per mapping */
#define MAX_FUNCTION_SYSCALLS 64 /* musl's pthread_barrier_wait has 20 */
#define MAX_GAP 128 /* bytes of padding after a function looked at for trampolines */
#define BITMAP_BYTES (((ZV_STUB_MAX_FUNCTION + MAX_GAP) / 8 + 8) & ~7UL) /* a function, its gap, and the byte after */
#define NBITMAPS 3
#define MAX_INSIDE 8192 /* per mapping: cc1 has about 150 */
#define MAX_PAIRS 16384 /* per mapping: libc has about 800 */
#define BATCH_SIZE (sizeof(struct zv_stub_batch) + MAX_WINDOWS * sizeof(struct zv_stub_window) + \
		    NBITMAPS * BITMAP_BYTES + (MAX_INSIDE + MAX_PAIRS) * sizeof(uint64_t))

static int bit(const uint8_t *m, uint64_t i) { return m[i >> 3] >> (i & 7) & 1; }
static void set_bit(uint8_t *m, uint64_t i) { m[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static int32_t s32(const uint8_t *p) { return (int32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }

/* The last batch freed, kept for the next mapping: the three code mappings
 * of an exec would each map, fault in and unmap half a megabyte. */
static struct zv_stub_batch *spare;

const uint64_t *zv_stubs_loader_ident;

struct zv_stub_batch *zv_stubs_batch_new(void)
{
	struct zv_stub_batch *b = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQUIRE);
	if (b)
		memset(b, 0, sizeof *b);
	else
		b = zv_kmap(BATCH_SIZE, 4096, -1);
	if (zv_is_err((long)b))
		return NULL;
	b->w = (struct zv_stub_window *)(b + 1);
	b->max = MAX_WINDOWS;
	b->starts = (uint8_t *)(b->w + MAX_WINDOWS);
	b->targets = b->starts + BITMAP_BYTES;
	b->pads = b->targets + BITMAP_BYTES;
	b->bitmap_bytes = BITMAP_BYTES;
	b->inside = (uint64_t *)(b->pads + BITMAP_BYTES);
	b->maxinside = MAX_INSIDE;
	b->pairs = b->inside + MAX_INSIDE;
	b->maxpairs = MAX_PAIRS;
	b->verdict = -1;
	if (zv_stubs_loader_ident) {
		memcpy(b->ident, zv_stubs_loader_ident, sizeof b->ident);
		b->has_ident = 1;
	}
	return b;
}

void zv_stubs_batch_free(struct zv_stub_batch *b)
{
	struct zv_stub_batch *none = NULL;
	if (!__atomic_compare_exchange_n(&spare, &none, b, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		zv_kunmap(b, BATCH_SIZE);
}

/* Whether the instruction at p (decoded as in) does in a stub what it did in
 * place: no control flow, nothing that traps on purpose, and no relative
 * operand but a rip-relative ModRM one (adjusted when moved). */
static int movable(const uint8_t *p, const struct zv_x86_insn *in)
{
	if (in->flow != ZV_X86_OTHER)
		return 0;
	int i = 0;
	while (i < in->len && ((p[i] & 0xf0) == 0x40 || p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf2 ||
			       p[i] == 0xf3 || p[i] == 0xf0 || p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 ||
			       p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65))
		i++;
	if (i >= in->len)
		return 0;
	int op = p[i], op2 = i + 1 < in->len ? p[i + 1] : -1;
	if (op == 0xcc || op == 0xcd || op == 0xce || op == 0xf1 || op == 0xf4)
		return 0; /* int3, int n, into, int1, hlt */
	if (op == 0x0f && (op2 == 0x05 || op2 == 0x34 || op2 == 0x07 || op2 == 0x0b || op2 == 0xb9 || op2 == 0xff))
		return 0; /* syscall, sysenter, sysret, ud2, ud1, ud0 */
	if (op == 0xc7 && op2 == 0xf8)
		return 0; /* xbegin rel32 */
	return 1;
}

/* Whether the instruction at p (l bytes) is alignment padding: int3 or a
 * NOP (90, 0f 1f /r, with 66 and 2e prefixes). */
static int is_pad(const uint8_t *p, int l)
{
	int i = 0;
	while (i < l - 1 && (p[i] == 0x66 || p[i] == 0x2e))
		i++;
	if (i == l - 1)
		return p[i] == 0x90 || (l == 1 && p[0] == 0xcc);
	return p[i] == 0x0f && p[i + 1] == 0x1f;
}

/* Whether the n bytes at p are zeros: what a linker puts between code
 * sections, which does not decode to their end. */
static int fill(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Decodes the function [code, code + len) at at: instruction starts, the
 * in-function targets of its direct branches and calls, and its dead
 * padding (pads: bytes of NOP or int3 instructions that follow a ret or a
 * jmp, or such padding, and that no branch reaches, directly or by falling
 * through), also in the gap bytes after it if they are all padding.
 * Returns the offsets of its syscalls in sys[], or -1 when it does not
 * decode: an undecodable instruction, one across its end, a direct branch
 * or an entry (j->entries, marked as targets) inside an instruction.
 * *indirect: it has an indirect jump, whose targets are unknown (then its
 * instruction starts are still right, but no window or trampoline is
 * judged). j->falls and j->gap_pad say how it ends (stubs.h). */
static int decode_function(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at,
			   uint64_t *sys, int *indirect, struct zv_stub_judge *j)
{
	*indirect = 0;
	int nsys = 0, live = 1; /* the next instruction is reached by falling through */
	int nij = 0, nleas = 0;
	uint64_t total = len + gap;
	j->falls = 0;
	j->gap_pad = 1;
	memset(b->starts, 0, (total + 8) / 8);
	memset(b->targets, 0, (total + 8) / 8);
	memset(b->pads, 0, (total + 8) / 8);
	for (uint64_t off = 0; off < total;) {
		if (off == len)
			j->falls |= live;
		struct zv_x86_insn in;
		int l = zv_x86_decode(code + off, total - off, &in);
		if (off >= len && (l < 0 || !is_pad(code + off, l))) {
			for (uint64_t i = len; i < total; i++) /* the gap holds more than padding */
				b->pads[i >> 3] &= (uint8_t)~(1u << (i & 7));
			j->gap_pad = 0;
			break;
		}
		if (off < len && (l < 0 || off + (uint64_t)l > len) && fill(code + off, len - off)) {
			off = len; /* zeros between sections, not code */
			live = 0;
			continue;
		}
		if (l < 0 || (off < len && off + (uint64_t)l > len))
			return -1;
		if (in.flow == ZV_X86_JMP_INDIRECT && off < len) {
			if (nij < (int)(sizeof b->ij / sizeof b->ij[0]))
				b->ij[nij] = (uint32_t)off;
			nij++;
		}
		if (in.has_mem && in.base == ZV_X86_RIP && !in.width && off < len) { /* a lea */
			if (nleas < (int)(sizeof b->leas / sizeof b->leas[0]))
				b->leas[nleas] = at + off + (uint64_t)l + (uint64_t)in.disp;
			nleas++;
		}
		set_bit(b->starts, off);
		if (!live && is_pad(code + off, l)) {
			for (int i = 0; i < l; i++)
				set_bit(b->pads, off + i);
		} else {
			live = in.flow != ZV_X86_RET && in.flow != ZV_X86_JMP;
		}
		int64_t t = -1;
		if (in.flow == ZV_X86_JMP || in.flow == ZV_X86_JCC)
			t = (int64_t)(off + l) + in.rel;
		else if (code[off] == 0xe8 && l == 5)
			t = (int64_t)(off + 5) + s32(code + off + 1); /* call next; pop: a target too */
		if (t >= 0 && (uint64_t)t <= total && off < len) {
			set_bit(b->targets, (uint64_t)t);
			if ((uint64_t)t >= len)
				j->falls = 1; /* the code goes on there */
		}
		if (l == 2 && code[off] == 0x0f && code[off + 1] == 0x05) {
			if (nsys == MAX_FUNCTION_SYSCALLS && j->windows)
				return -1; /* too many to judge: none is */
			if (nsys < MAX_FUNCTION_SYSCALLS)
				sys[nsys] = off;
			nsys++;
		}
		off += (uint64_t)l;
	}
	if (total == len)
		j->falls |= live;
	for (int k = 0; k < j->nentries; k++)
		if (j->entries[k] < len)
			set_bit(b->targets, j->entries[k]);
	/* A branch into an instruction: the decode is not the code's. */
	for (uint64_t w = 0; w < (len + 7) / 8; w++)
		if (b->targets[w] & ~b->starts[w] & (w == len / 8 ? (uint8_t)((1u << (len & 7)) - 1) : 0xff))
			return -1;
	/* A jump table's targets are branch targets too (intercept/jumptab.c). */
	if (nij && (nij > (int)(sizeof b->ij / sizeof b->ij[0]) || nleas > (int)(sizeof b->leas / sizeof b->leas[0]) ||
		    zv_jumptab_mark(code, len, at, b->starts, b->targets, b->ij, nij, b->leas, nleas, b->read,
				    b->read_ctx) < 0))
		*indirect = 1;
	/* Padding from a branch target on is reached by falling through. */
	for (uint64_t t = 0; t < total; t++)
		if (bit(b->targets, t))
			for (uint64_t i = t; i < total && bit(b->pads, i); i++)
				b->pads[i >> 3] &= (uint8_t)~(1u << (i & 7));
	return nsys;
}

/* Whether [x, x + 5) overlaps one of the last trampolines made (one in a
 * neighbour's padding, which the neighbour's own decode does not know;
 * functions come in address order, so older ones are far away, and
 * zv_stubs_commit checks every window against its neighbours anyway). */
static int claimed(const struct zv_stub_batch *b, uint64_t x)
{
	int n = b->nrecent < 64 ? b->nrecent : 64;
	for (int i = 0; i < n; i++)
		if (b->recent[i] < x + 5 && x < b->recent[i] + 5)
			return 1;
	return 0;
}

/* Whether the syscall at offset s of code is a signal restorer's
 * rt_sigreturn (`mov $15, %rax` or `%eax` just before it). Unwinders find
 * signal frames by these bytes (libgcc for code without an FDE, as musl's
 * __restore_rt; libunwind; gdb), and a stub would gain nothing: the call
 * needs the full frame, so it would bounce to SIGSYS anyway. */
int zv_stubs_is_restorer(const uint8_t *code, uint64_t s)
{
	static const uint8_t movq[7] = { 0x48, 0xc7, 0xc0, 15, 0, 0, 0 }, movl[5] = { 0xb8, 15, 0, 0, 0 };
	return (s >= 7 && !memcmp(code + s - 7, movq, 7)) || (s >= 5 && !memcmp(code + s - 5, movl, 5));
}

/* A trampoline for the syscall at address s, in the decoded area of total
 * bytes at at: 5 bytes of dead padding [x, x + 5) starting an instruction,
 * within a rel8 jump from s + 2, taken (cleared from pads). Returns x, or
 * -1. */
static int64_t trampoline(struct zv_stub_batch *b, uint64_t s, uint64_t total, uint64_t at)
{
	int64_t lo = (int64_t)(s + 2) - 128 - (int64_t)at, hi = (int64_t)(s + 2) + 127 - (int64_t)at;
	for (int64_t x = lo < 0 ? 0 : lo; x <= hi && (uint64_t)x + 5 <= total; x++) {
		if (!bit(b->starts, (uint64_t)x))
			continue;
		int ok = 1;
		for (int i = 0; i < 5 && ok; i++)
			ok = bit(b->pads, (uint64_t)x + i);
		if (!ok || claimed(b, at + (uint64_t)x))
			continue;
		for (int i = 0; i < 5; i++)
			b->pads[(x + i) >> 3] &= (uint8_t)~(1u << ((x + i) & 7));
		return x;
	}
	return -1;
}

/* Adds the window through a trampoline at d for the syscall at s; pad:
 * the padding's bytes as they were (a tracer reads them back). */
static void add_trampoline(struct zv_stub_batch *b, uint64_t s, uint64_t d, const uint8_t *pad)
{
	struct zv_stub_window *w = &b->w[b->n++];
	w->p = w->s = s;
	w->d = d;
	memcpy(w->code, pad, 5);
	b->recent[b->nrecent++ % 64] = d;
}

int zv_stubs_judge(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at,
		   struct zv_stub_judge *j)
{
	uint64_t sys[MAX_FUNCTION_SYSCALLS];
	b->norphans = 0;
	if (gap > MAX_GAP)
		gap = MAX_GAP;
	if (len + gap + 1 > b->bitmap_bytes * 8)
		return -1;
	int indirect, nsys = decode_function(b, code, len, gap, at, sys, &indirect, j);
	if (nsys < 0)
		return -1;
	/* Call byte pairs inside the function's instructions: no branch of
	 * compiled code lands there (the premise of every window too; a jump
	 * table's targets are instruction starts). */
	for (uint64_t i = 1; i + 1 < len; i++)
		if (zv_stubs_is_call_pair(code + i) && !bit(b->starts, i) && !bit(b->targets, i) &&
		    b->ninside < b->maxinside)
			b->inside[b->ninside++] = at + i;
	/* Where the branches into it are not all known, no window: but a
	 * syscall may still become `jmp rel8` to a trampoline, which keeps
	 * every instruction boundary where it was (no branch lands in
	 * padding, whatever its kind: padding lies before an aligned label
	 * or after the code, never at one). */
	int windows = !indirect && j->windows;
	for (int k = 0; k < nsys && k < MAX_FUNCTION_SYSCALLS && b->n < b->max; k++) {
		uint64_t s = sys[k], p = s;
		int ok = windows;
		if (zv_stubs_is_restorer(code, s))
			continue;
		while (ok && s + 2 - p < 5) {
			/* p becomes an inner instruction: nothing may jump to it */
			if (p == 0 || bit(b->targets, p)) {
				ok = 0;
				break;
			}
			uint64_t q = p - 1;
			while (q > 0 && !bit(b->starts, q))
				q--;
			struct zv_x86_insn in;
			ok = zv_x86_decode(code + q, len - q, &in) == (int)(p - q) && movable(code + q, &in);
			p = q;
		}
		if (!ok || s - p > ZV_STUB_MAX_MOVED) {
			/* no window before it: the syscall alone, through padding
			 * here or in a neighbour's */
			int64_t d = trampoline(b, at + s, len + gap, at);
			if (d >= 0)
				add_trampoline(b, at + s, at + (uint64_t)d, code + d);
			else if (b->norphans < (int)(sizeof b->orphans / sizeof b->orphans[0]))
				b->orphans[b->norphans++] = at + s;
			continue;
		}
		struct zv_stub_window *w = &b->w[b->n++];
		w->p = at + p;
		w->s = at + s;
		w->d = 0;
		memcpy(w->code, code + p, s - p);
	}
	return nsys;
}

void zv_stubs_function(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at)
{
	struct zv_stub_judge j = { .windows = 1 };
	zv_stubs_judge(b, code, len, gap, at, &j);
}

void zv_stubs_neighbor(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at)
{
	uint64_t sys[MAX_FUNCTION_SYSCALLS];
	int n = b->norphans, kept = 0;
	if (gap > MAX_GAP)
		gap = MAX_GAP;
	int indirect;
	struct zv_stub_judge j = { .windows = 1 };
	if (!n || len + gap + 1 > b->bitmap_bytes * 8 || decode_function(b, code, len, gap, at, sys, &indirect, &j) < 0 ||
	    indirect)
		return;
	for (int k = 0; k < n; k++) {
		int64_t d = b->n < b->max ? trampoline(b, b->orphans[k], len + gap, at) : -1;
		if (d >= 0)
			add_trampoline(b, b->orphans[k], at + (uint64_t)d, code + d);
		else
			b->orphans[kept++] = b->orphans[k]; /* for another neighbour */
	}
	b->norphans = kept;
}
