/* Jump stubs: the fast path without page 0 (DESIGN section 12).
 *
 * A window is a `syscall` at s and the whole instructions [p, s) before it,
 * at least 5 bytes in all, none of them a branch, and no branch of the
 * decoded function landing inside it (at any instruction after p). It
 * becomes `jmp rel32` to the window's stub, followed by int3 up to s + 2.
 * The stub, in a region mapped within 2 GiB of the code, is
 *
 *   X:      the instructions of [p, s), same lengths (a rip-relative
 *           displacement is adjusted by p - X)
 *           lea 0(%rip), %rcx      rcx = K, the stub's key
 *   K:      jmp region_tail
 *   K + 5:  .quad s - K
 *
 * and the region's tail is `movabs $zv_stub_entry, %r11; jmp *%r11`. The
 * site is stored relative to the key, so a region's bytes depend only on
 * its offset from the code and on zvisor's entry (fixed: the image is
 * linked at ZV_KWIN_START): a shared copy's file holds them (sharedtext.c). rcx
 * and r11 are what the host's syscall clobbers; nothing is pushed, so the
 * guest's red zone is never touched. The kernel returns to s + 2 itself
 * (arch/fastentry.S zv_stub_exit), so a stub has no code after the call.
 *
 * A stub's instruction at X + i stands for p + i: a signal or a fault there
 * shows the guest p + i (zv_stubs_guest_ip), and a guest that resumes at an
 * address inside a window, through sigreturn, continues in its stub
 * (zv_stubs_resume_ip). Windows are only made in code no thread runs yet
 * (at load), so no thread can be inside one while it is written. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/stubs.h"
#include "intercept/sites.h"
#include "intercept/x86ops.h"
#include <linux/mman.h>

#define STUB_SIZE 64 /* moved bytes + lea (7) + jmp (5) + the site (8) */
#define TAIL_SIZE 16 /* movabs (10) + jmp *%r11 (3), padded */
#define MAX_REGIONS 256
#define MAX_WINDOWS 8192 /* per mapping */
#define MAX_FUNCTION_SYSCALLS 64 /* musl's pthread_barrier_wait has 20 */
#define MAX_GAP 128 /* bytes of padding after a function looked at for trampolines */
#define BITMAP_BYTES (((ZV_STUB_MAX_FUNCTION + MAX_GAP) / 8 + 8) & ~7UL) /* a function, its gap, and the byte after */
#define NBITMAPS 3
#define MAX_INSIDE 8192 /* per mapping: cc1 has about 150 */
#define MAX_PAIRS 16384 /* per mapping: libc has about 800 */
#define BATCH_SIZE (sizeof(struct zv_stub_batch) + MAX_WINDOWS * sizeof(struct zv_stub_window) + \
		    NBITMAPS * BITMAP_BYTES + (MAX_INSIDE + MAX_PAIRS) * sizeof(uint64_t))

_Static_assert((ZV_STUBS_FORMAT >> 8 & 0xff) == STUB_SIZE && (ZV_STUBS_FORMAT & 0xff) == TAIL_SIZE,
	      "a new stub layout is a new ZV_STUBS_FORMAT");
struct rec { uint64_t p, s, d; };
struct region {
	uint64_t lo, hi;         /* the stubs: tail, then one STUB_SIZE slot per rec */
	uint64_t code_lo, code_hi; /* the code whose windows they serve */
	const struct rec *recs;  /* sorted by p */
	int n;
};
static struct region regions[MAX_REGIONS];
static int nregions;
static volatile int regions_lock;
static unsigned long nstubs;

static int bit(const uint8_t *m, uint64_t i) { return m[i >> 3] >> (i & 7) & 1; }
static void set_bit(uint8_t *m, uint64_t i) { m[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static int32_t s32(const uint8_t *p) { return (int32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }
static int fits32(int64_t v) { return v == (int32_t)v; }

/* The last batch freed, kept for the next mapping: the three code mappings
 * of an exec would each map, fault in and unmap half a megabyte. */
static struct zv_stub_batch *spare;

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

/* Adds the window through a trampoline at x for the syscall at s. */
static void add_trampoline(struct zv_stub_batch *b, uint64_t s, uint64_t d)
{
	struct zv_stub_window *w = &b->w[b->n++];
	w->p = w->s = s;
	w->d = d;
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
				add_trampoline(b, at + s, at + (uint64_t)d);
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
			add_trampoline(b, b->orphans[k], at + (uint64_t)d);
		else
			b->orphans[kept++] = b->orphans[k]; /* for another neighbour */
	}
	b->norphans = kept;
}

/* A region of size bytes below [lo, hi) (or, failing that, above it),
 * from which every address of [lo, hi) is within a rel32. Below first, in
 * 1 MiB steps and then 16 MiB ones, starting 1 MiB down: right below the
 * code is almost never free (an ELF's first, read-only segment, or the
 * vDSO's vvar), and a try there was a failed mmap per mapping. The heap
 * (brk) grows up from the end of the executable, so above starts 1 GiB
 * up, out of its way. */
static uint64_t place(uint64_t lo, uint64_t hi, size_t size)
{
	for (int dir = 0; dir < 2; dir++) {
		for (uint64_t k = 1; k < 80; k++) {
			uint64_t step = k < 32 ? k << 20 : (32UL << 20) + (k - 32) * (16UL << 20);
			uint64_t at = dir == 0 ? ((lo - size) & ~4095UL) - step
					       : ((hi + 4095) & ~4095UL) + (1UL << 30) + step;
			if (dir == 0 && (lo < size + step + 65536 || at > lo))
				break;
			if ((dir == 0 ? hi - at : at + size - lo) > (1UL << 31) - (1UL << 24))
				break;
			/* populated by the host in this call: every byte is written next */
			void *m = zv_mmap((void *)at, size, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_POPULATE, -1, 0);
			if (zv_is_err((long)m))
				continue;
			if ((uint64_t)m == at)
				return at;
			zv_munmap(m, size); /* an old kernel that ignores NOREPLACE */
		}
	}
	return 0;
}

/* Writes w's stub at x (in the region at base); 0 if a displacement does
 * not reach. */
static int write_stub(uint8_t *x, uint64_t xa, uint64_t base, const struct zv_stub_window *w)
{
	uint64_t moved = w->s - w->p;
	memcpy(x, w->code, moved);
	for (uint64_t off = 0; off < moved;) {
		struct zv_x86_insn in;
		int l = zv_x86_decode(x + off, moved - off, &in);
		if (l <= 0)
			return 0;
		if (in.has_mem && in.base == ZV_X86_RIP) {
			int64_t d = in.disp + (int64_t)(w->p - xa);
			if (!fits32(d))
				return 0;
			int32_t d32 = (int32_t)d;
			memcpy(x + off + in.disp_at, &d32, 4);
		}
		off += (uint64_t)l;
	}
	uint8_t *e = x + moved;
	static const uint8_t lea_rcx[7] = { 0x48, 0x8d, 0x0d, 0, 0, 0, 0 }; /* lea 0(%rip), %rcx */
	memcpy(e, lea_rcx, 7);
	int64_t rel = (int64_t)base - (int64_t)(xa + moved + 7 + 5);
	e[7] = 0xe9; /* jmp rel32 to the region's tail */
	int32_t r32 = (int32_t)rel;
	memcpy(e + 8, &r32, 4);
	int64_t site = (int64_t)(w->s - (xa + moved + 7)); /* from the key, K */
	memcpy(e + 12, &site, 8);
	return 1;
}

/* The index of the first of n elements of size bytes at arr, sorted by
 * their first field (a window's p: struct rec, struct zv_stub_window), that
 * is at or above v. */
_Static_assert(__builtin_offsetof(struct rec, p) == 0 && __builtin_offsetof(struct zv_stub_window, p) == 0,
	       "first_p reads p as the first field");
static int first_p(const void *arr, int n, size_t size, uint64_t v)
{
	int a = 0, z = n;
	while (a < z) {
		int m = (a + z) / 2;
		if (*(const uint64_t *)((const char *)arr + (size_t)m * size) < v)
			a = m + 1;
		else
			z = m;
	}
	return a;
}

static int overlaps(uint64_t a, uint64_t alen, uint64_t c, uint64_t clen) { return a < c + clen && c < a + alen; }

/* Sorts the batch by p (it is in order but for trampolines in a
 * neighbour's padding) and drops each trampoline window whose trampoline
 * overlaps another window's bytes or trampoline: windows of 34 bytes at
 * most, trampolines within 130 bytes of their syscall, so only windows
 * starting within 300 bytes can overlap. */
static void sort_and_check(struct zv_stub_batch *b)
{
	for (int i = 1; i < b->n; i++) {
		struct zv_stub_window w = b->w[i];
		int j = i;
		for (; j > 0 && b->w[j - 1].p > w.p; j--)
			b->w[j] = b->w[j - 1];
		b->w[j] = w;
	}
	for (int i = 0; i < b->n; i++) {
		struct zv_stub_window *w = &b->w[i];
		if (!w->d)
			continue;
		for (int j = first_p(b->w, b->n, sizeof *b->w, w->d > 300 ? w->d - 300 : 0); j < b->n && b->w[j].p < w->d + 300; j++) {
			const struct zv_stub_window *o = &b->w[j];
			if (j != i && o->s && (overlaps(w->d, 5, o->p, o->s + 2 - o->p) ||
					       (o->d && overlaps(w->d, 5, o->d, 5)))) {
				w->s = 0; /* dropped (p keeps the order) */
				break;
			}
		}
	}
}

/* Whether window w can have a stub in [lo, hi) after the window ending at
 * prev_end: inside the code, in order, a trampoline within rel8 of its
 * syscall, and the stub at xa within a rel32 of its jump. */
static int window_fits(const struct zv_stub_window *w, uint64_t lo, uint64_t hi, uint64_t prev_end, uint64_t xa)
{
	uint64_t from = w->d ? w->d : w->p; /* where the jmp rel32 to the stub goes */
	int64_t rel8 = (int64_t)w->d - (int64_t)(w->s + 2);
	return w->s && w->p >= lo && w->s + 2 <= hi && w->p >= prev_end && w->s >= w->p &&
	       w->s - w->p <= ZV_STUB_MAX_MOVED &&
	       (!w->d || (w->p == w->s && w->d >= lo && w->d + 5 <= hi && rel8 == (int8_t)rel8)) &&
	       fits32((int64_t)xa - (int64_t)(from + 5));
}

/* The region's tail: movabs $zv_stub_entry, %r11; jmp *%r11; int3 padding. */
static void write_tail(uint8_t *r)
{
	memset(r, 0xcc, TAIL_SIZE);
	r[0] = 0x49;
	r[1] = 0xbb;
	uint64_t entry = (uint64_t)zv_stub_entry;
	memcpy(r + 2, &entry, 8);
	r[10] = 0x41;
	r[11] = 0xff;
	r[12] = 0xe3;
}

/* The stubs of b's windows for a region at base, in order, written at r,
 * or (r NULL) compared with the bytes at want, the same region as a copy's
 * file holds it; a window that does not fit is left out, unless all must
 * fit (then none is made). Returns how many, in recs; -1 if want differs. */
static int fill_region(struct zv_stub_batch *b, uint64_t lo, uint64_t hi, uint64_t base, size_t size, int all,
		       uint8_t *r, const uint8_t *want, struct rec *recs)
{
	uint8_t one[STUB_SIZE];
	if (r) {
		memset(r, 0xcc, size);
		write_tail(r);
	} else {
		write_tail(one);
		if (memcmp(one, want, TAIL_SIZE))
			return -1;
	}
	int n = 0;
	for (int i = 0; i < b->n; i++) {
		const struct zv_stub_window *w = &b->w[i];
		uint64_t xa = base + TAIL_SIZE + (uint64_t)n * STUB_SIZE;
		uint8_t *x = r ? r + (xa - base) : one;
		if (!r)
			memset(one, 0xcc, STUB_SIZE);
		if (window_fits(w, lo, hi, n ? recs[n - 1].s + 2 : 0, xa) && write_stub(x, xa, base, w)) {
			if (!r && memcmp(one, want + (xa - base), STUB_SIZE))
				return -1;
			recs[n++] = (struct rec){ w->p, w->s, w->d };
			if (n - 1 != i)
				b->w[n - 1] = *w; /* b keeps the windows made, as the stubs' order */
		} else if (all) {
			return 0;
		}
	}
	for (size_t i = TAIL_SIZE + (size_t)n * STUB_SIZE; !r && i < size; i++)
		if (want[i] != 0xcc)
			return -1;
	return n;
}

/* Maps a region of size bytes at base (exactly there with MAP_FIXED_NOREPLACE
 * when fixed, else the first place that fits near [lo, hi)) and writes the
 * stubs of b's windows into it (fill_region). Returns the region's address
 * (0: none) and in recs[0..*n) the windows it serves. */
static uint64_t make_region(struct zv_stub_batch *b, uint64_t lo, uint64_t hi, uint64_t base, size_t size, int all,
			    struct rec *recs, int *nout)
{
	if (base) {
		void *m = zv_mmap((void *)base, size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_POPULATE, -1, 0);
		if (zv_is_err((long)m))
			return 0;
		if ((uint64_t)m != base) { /* an old kernel that ignores NOREPLACE */
			zv_munmap(m, size);
			return 0;
		}
	} else if (!(base = place(lo, hi, size))) {
		return 0;
	}
	uint8_t *r = (uint8_t *)base;
	int n = fill_region(b, lo, hi, base, size, all, r, NULL, recs);
	zv_mprotect(r, size, PROT_READ | PROT_EXEC);
	if (n <= 0) {
		zv_munmap(r, size);
		return 0;
	}
	*nout = n;
	return base;
}

/* The region at base mapped from a copy's file (fd, at foff), kept once
 * its bytes are the stubs b would make there: one mapping, shared through
 * the page cache (populated: the check reads every page, and the mapping
 * of page cache pages allocates nothing). 0: its place is taken; -1: the
 * file's stubs differ. */
static int file_region(struct zv_stub_batch *b, uint64_t lo, uint64_t hi, uint64_t base, size_t size,
		       const struct zv_stub_file *f, struct rec *recs, int *nout)
{
	void *m = zv_mmap((void *)base, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE | MAP_POPULATE,
			  f->fd, (long)f->off);
	if (zv_is_err((long)m))
		return 0;
	int n = (uint64_t)m == base ? fill_region(b, lo, hi, base, size, 1, NULL, m, recs)
				    : 0; /* an old kernel that ignores NOREPLACE */
	if (n <= 0) {
		zv_munmap(m, size);
		return n;
	}
	*nout = n;
	return 1;
}

uint64_t zv_stubs_stub_at(uint64_t base, int i)
{
	return base + TAIL_SIZE + (uint64_t)i * STUB_SIZE;
}

size_t zv_stubs_region_size(int n)
{
	return (TAIL_SIZE + (size_t)n * STUB_SIZE + 4095) & ~4095UL;
}

int zv_stubs_is_region(uint64_t lo, uint64_t hi)
{
	int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (lo < regions[i].hi && regions[i].lo < hi)
			return 1;
	return 0;
}

static void add_region(uint64_t base, size_t size, uint64_t lo, uint64_t hi, const struct rec *recs, int n)
{
	zv_lock(&regions_lock);
	int k = nregions;
	if (k < MAX_REGIONS) {
		regions[k] = (struct region){ base, base + size, lo, hi, recs, n };
		__atomic_store_n(&nregions, k + 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&nstubs, (unsigned long)n, __ATOMIC_RELAXED);
	}
	zv_unlock(&regions_lock);
}

/* b[i] stands for address at + i; bytes outside [at, at + n) are left out. */
static void put(uint8_t *b, uint64_t at, uint64_t n, uint64_t a, uint8_t v)
{
	if (a >= at && a - at < n)
		b[a - at] = v;
}

void zv_stubs_window_bytes(uint64_t p, uint64_t s, uint64_t d, uint64_t stub, uint8_t *b, uint64_t at, uint64_t n)
{
	uint64_t c = d ? d : p;
	int32_t rel = (int32_t)((int64_t)stub - (int64_t)(c + 5));
	uint8_t r[4];
	memcpy(r, &rel, 4);
	put(b, at, n, c, 0xe9); /* jmp rel32 to the stub */
	for (int k = 0; k < 4; k++)
		put(b, at, n, c + 1 + (uint64_t)k, r[k]);
	if (d) { /* then the syscall becomes jmp rel8 to the trampoline, its operand first */
		put(b, at, n, s + 1, (uint8_t)(int8_t)((int64_t)d - (int64_t)(s + 2)));
		put(b, at, n, s, 0xeb);
	}
	for (uint64_t x = p + 5; !d && x < s + 2; x++)
		put(b, at, n, x, 0xcc); /* int3 up to the call's end */
}

int zv_stubs_commit(struct zv_thread *t, struct zv_stub_batch *b, uint64_t lo, uint64_t hi, int prot,
		    int already_writable)
{
	(void)t;
	b->region = 0;
	if (b->n == 0 || __atomic_load_n(&nregions, __ATOMIC_ACQUIRE) == MAX_REGIONS)
		return 0;
	sort_and_check(b);
	size_t size = zv_stubs_region_size(b->n), rsize = (size_t)b->n * sizeof(struct rec);
	struct rec *recs = zv_kmap(rsize, 4096, -1);
	if (zv_is_err((long)recs))
		return 0;
	int n = 0;
	uint64_t base = make_region(b, lo, hi, 0, size, 0, recs, &n);
	if (!base) {
		zv_kunmap(recs, rsize);
		return 0;
	}
	if (already_writable != ZV_STUBS_OPENED)
		zv_sites_lock();
	int writable = already_writable || (prot & PROT_WRITE) ||
		       zv_mprotect((void *)lo, hi - lo, prot | PROT_READ | PROT_WRITE) == 0;
	if (writable) {
		for (int i = 0; i < n; i++)
			zv_stubs_window_bytes(recs[i].p, recs[i].s, recs[i].d, base + TAIL_SIZE + (uint64_t)i * STUB_SIZE,
					      (uint8_t *)lo, lo, hi - lo);
		if (!already_writable && !(prot & PROT_WRITE))
			zv_mprotect((void *)lo, hi - lo, prot);
	}
	if (already_writable != ZV_STUBS_OPENED)
		zv_sites_unlock();
	if (!writable) {
		zv_munmap((void *)base, size);
		zv_kunmap(recs, rsize);
		return 0;
	}
	add_region(base, size, lo, hi, recs, n);
	b->n = n;
	b->region = base;
	return n;
}

int zv_stubs_commit_at(struct zv_stub_batch *b, uint64_t lo, uint64_t hi, uint64_t base,
		       const struct zv_stub_file *f, int (*map_code)(void *ctx), void *ctx)
{
	if (b->n == 0 || (base & 4095) || __atomic_load_n(&nregions, __ATOMIC_ACQUIRE) == MAX_REGIONS)
		return 0;
	size_t size = zv_stubs_region_size(b->n), rsize = (size_t)b->n * sizeof(struct rec);
	struct rec *recs = zv_kmap(rsize, 4096, -1);
	if (zv_is_err((long)recs))
		return 0;
	int n = 0, made = f ? file_region(b, lo, hi, base, size, f, recs, &n)
			    : make_region(b, lo, hi, base, size, 1, recs, &n) != 0;
	if (made <= 0) {
		zv_kunmap(recs, rsize);
		return made;
	}
	if (!map_code(ctx)) {
		zv_munmap((void *)base, size);
		zv_kunmap(recs, rsize);
		return 0;
	}
	add_region(base, size, lo, hi, recs, n);
	b->region = base;
	return n;
}

int zv_stubs_window_page(uint64_t page)
{
	int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		const struct region *r = &regions[i];
		if (page + 4096 <= r->code_lo || page >= r->code_hi)
			continue;
		/* a window is at most 34 bytes, a trampoline within 130 of its syscall */
		for (int k = first_p(r->recs, r->n, sizeof *r->recs, page > 200 ? page - 200 : 0);
		     k < r->n && r->recs[k].p < page + 4096; k++) {
			const struct rec *w = &r->recs[k];
			if (overlaps(w->p, w->s + 2 - w->p, page, 4096) || (w->d && overlaps(w->d, 5, page, 4096)))
				return 1;
		}
	}
	return 0;
}

static void write_touch(uint64_t a) { __asm__ volatile("lock orb $0, %0" : "+m"(*(volatile uint8_t *)a)); }

int zv_stubs_open(const struct zv_stub_batch *b, uint64_t lo, uint64_t hi, int prot)
{
	zv_sites_lock();
	if (!(prot & PROT_WRITE) && zv_mprotect((void *)lo, hi - lo, prot | PROT_READ | PROT_WRITE) != 0) {
		zv_sites_unlock();
		return 0;
	}
	uint64_t done = 0; /* the last page written: windows come in order */
	for (int i = 0; i < b->n; i++) {
		const struct zv_stub_window *w = &b->w[i];
		uint64_t spans[2][2] = { { w->p, w->s + 2 }, { w->d, w->d + 5 } };
		for (int k = 0; k < (w->d ? 2 : 1); k++)
			for (uint64_t pg = spans[k][0] & ~4095UL; pg < spans[k][1]; pg += 4096)
				if (pg != done && pg >= lo && pg < hi) {
					write_touch(pg > spans[k][0] ? pg : spans[k][0]);
					done = pg;
				}
	}
	return 1;
}

void zv_stubs_close(uint64_t lo, uint64_t hi, int prot)
{
	if (!(prot & PROT_WRITE))
		zv_mprotect((void *)lo, hi - lo, prot);
	zv_sites_unlock();
}

uint64_t zv_stubs_guest_ip(uint64_t ip, uint64_t rcx)
{
	int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		const struct region *r = &regions[i];
		if (ip >= r->code_lo && ip < r->code_hi) {
			/* on a trampoline, the thread has not made its call yet:
			 * it is at the syscall, within a rel8 jump of it */
			for (int k = first_p(r->recs, r->n, sizeof *r->recs, ip > 136 ? ip - 136 : 0); k < r->n && r->recs[k].p <= ip + 136; k++)
				if (r->recs[k].d == ip)
					return r->recs[k].s;
			continue;
		}
		if (ip < r->lo || ip >= r->hi)
			continue;
		if (ip < r->lo + TAIL_SIZE)
			return zv_stub_site(rcx); /* on its way in: rcx holds the key */
		uint64_t k = (ip - r->lo - TAIL_SIZE) / STUB_SIZE;
		if (k >= (uint64_t)r->n)
			return ip;
		uint64_t off = ip - (r->lo + TAIL_SIZE + k * STUB_SIZE), moved = r->recs[k].s - r->recs[k].p;
		return off < moved ? r->recs[k].p + off : r->recs[k].s; /* the call not made yet */
	}
	return ip;
}

uint64_t zv_stubs_resume_ip(uint64_t ip)
{
	int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		const struct region *r = &regions[i];
		if (ip <= r->code_lo || ip >= r->code_hi)
			continue;
		int z = first_p(r->recs, r->n, sizeof *r->recs, ip) - 1; /* the last window starting below ip */
		if (z >= 0 && ip <= r->recs[z].s)
			return r->lo + TAIL_SIZE + (uint64_t)z * STUB_SIZE + (ip - r->recs[z].p);
	}
	return ip;
}

int zv_stubs_regions(uint64_t (*out)[2], int max)
{
	int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE), k = 0;
	for (int i = 0; i < n && k < max; i++, k++) {
		out[k][0] = regions[i].lo;
		out[k][1] = regions[i].hi;
	}
	return k;
}

unsigned long zv_stubs_count(void)
{
	return nstubs;
}

/* The bounce `syscall` (arch/fastentry.S zv_fast_bounce): text's last
 * page, outside the kernel text that SUD and seccomp exempt, so that the
 * catch-all turns it into SIGSYS. */
extern char zv_bounce_page[];
uint64_t zv_stubs_bounce_site(void)
{
	return (uint64_t)zv_bounce_page;
}
