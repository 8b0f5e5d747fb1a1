/* Jump stubs: the fast path without page 0 (DESIGN "Jump stubs and SUD off").
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
 * (intercept/fastentry.S zv_stub_exit), so a stub has no code after the call.
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

_Static_assert((ZV_STUBS_FORMAT >> 8 & 0xff) == STUB_SIZE && (ZV_STUBS_FORMAT & 0xff) == TAIL_SIZE,
	      "a new stub layout is a new ZV_STUBS_FORMAT");
#define rec zv_stub_rec
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

static int fits32(int64_t v) { return v == (int32_t)v; }

/* An anonymous region is NORESERVE: a flag the guest's anonymous code
 * mappings lack, so the host never merges one placed next to it into one
 * mapping (/proc/self/maps would hide the guest's with the region). */
#define REGION_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_POPULATE | MAP_NORESERVE)

static int region_at(uint64_t at, size_t size)
{
	/* populated by the host in this call: every byte is written next */
	void *m = zv_mmap((void *)at, size, PROT_READ | PROT_WRITE, REGION_FLAGS, -1, 0);
	if (zv_is_err((long)m))
		return 0;
	if ((uint64_t)m == at)
		return 1;
	zv_munmap(m, size); /* an old kernel that ignores NOREPLACE */
	return 0;
}

#define REACH ((1UL << 31) - (1UL << 24)) /* a rel32 from any byte of the code, with room */
#define UPPER_AT (56UL << 20)

/* The gap above the mmap area's top (zv_proc.mmap_top, loader/layout.c)
 * that the stack never grows into: the host places none of the guest's
 * mappings there (it fills the area downwards from its top), so a region
 * there moves none of them from where they land natively. Regions start
 * UPPER_AT up (at most half the gap): a copy's region (sharedtext.c) is at
 * a fixed offset from its code, and the same library lies deeper or
 * shallower in another program's area. */
static uint64_t upper_start(void)
{
	uint64_t room = zv_proc.upper_hi - zv_proc.mmap_top;
	return zv_proc.mmap_top + ((room / 2 < UPPER_AT ? room / 2 : UPPER_AT) & ~0xffffUL);
}

/* Whether the region of code at [lo, hi) belongs in that gap. */
static int upper_for(uint64_t lo, uint64_t hi, size_t size)
{
	return zv_proc.upper_hi && hi <= zv_proc.mmap_top && upper_start() + size - lo <= REACH;
}

int zv_stubs_place_ok(uint64_t lo, uint64_t hi, uint64_t at, size_t size)
{
	return !upper_for(lo, hi, size) ||
	       (at >= zv_proc.mmap_top && at + size <= zv_proc.upper_hi && at + size - lo <= REACH);
}

/* A region of size bytes below [lo, hi) (or, failing that, above it),
 * from which every address of [lo, hi) is within a rel32. Code in the mmap
 * area has it in the gap above (upper_for), the first place free from
 * upper_start up. Else first right
 * below the file's mapping (span_lo, its offset 0), which a library's
 * loader has just mapped top-down, so the space below is free and the
 * region shares the library's page table (a page-table page fewer for
 * every fork to copy). Then below in 1 MiB steps and then 16 MiB ones,
 * starting 1 MiB down: right below the code itself is almost never free
 * (an ELF's first, read-only segment, or the vDSO's vvar). The heap (brk)
 * grows up from the end of the executable, so above starts 1 GiB up, out
 * of its way. */
static uint64_t place(uint64_t lo, uint64_t hi, size_t size, uint64_t span_lo, int above)
{
	if (upper_for(lo, hi, size)) {
		for (uint64_t at = upper_start(); at + size <= zv_proc.upper_hi && at + size - lo <= REACH; at += 65536)
			if (region_at(at, size))
				return at;
	}
	/* The vDSO's right above it: the top of the mmap area, where the host
	 * puts nothing else (it fills the area downwards); an exec in this
	 * process keeps it and the vDSO as one range (one munmap fewer). */
	if (above && region_at((hi + 4095) & ~4095UL, size))
		return (hi + 4095) & ~4095UL;
	if (span_lo > size + 65536 && span_lo <= lo && hi - (span_lo - size) < REACH &&
	    region_at(span_lo - size, size))
		return span_lo - size;
	for (int dir = 0; dir < 2; dir++) {
		for (uint64_t k = 1; k < 80; k++) {
			uint64_t step = k < 32 ? k << 20 : (32UL << 20) + (k - 32) * (16UL << 20);
			uint64_t at = dir == 0 ? ((lo - size) & ~4095UL) - step
					       : ((hi + 4095) & ~4095UL) + (1UL << 30) + step;
			if (dir == 0 && (lo < size + step + 65536 || at > lo))
				break;
			if ((dir == 0 ? hi - at : at + size - lo) > REACH)
				break;
			if (region_at(at, size))
				return at;
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
 * file holds it, unless that file is trusted (its mark holds: written by
 * zvisor with every one of these windows made, and not since); a window
 * that does not fit is left out, unless all must fit (then none is made).
 * Returns how many, in recs; -1 if want differs. */
static int fill_region(struct zv_stub_batch *b, uint64_t lo, uint64_t hi, uint64_t base, size_t size, int all,
		       uint8_t *r, const uint8_t *want, int trusted, struct rec *recs)
{
	uint8_t one[STUB_SIZE];
	int check = !r && !trusted;
	if (r) {
		memset(r, 0xcc, size);
		write_tail(r);
	} else if (check) {
		write_tail(one);
		if (memcmp(one, want, TAIL_SIZE))
			return -1;
	}
	int n = 0;
	for (int i = 0; i < b->n; i++) {
		const struct zv_stub_window *w = &b->w[i];
		uint64_t xa = base + TAIL_SIZE + (uint64_t)n * STUB_SIZE;
		uint8_t *x = r ? r + (xa - base) : one;
		if (check)
			memset(one, 0xcc, STUB_SIZE);
		if (window_fits(w, lo, hi, n ? recs[n - 1].s + 2 : 0, xa) && (trusted || write_stub(x, xa, base, w))) {
			if (check && memcmp(one, want + (xa - base), STUB_SIZE))
				return -1;
			recs[n] = (struct rec){ .p = w->p, .s = w->s, .d = w->d };
			memcpy(recs[n++].orig, w->code, sizeof w->code);
			if (n - 1 != i)
				b->w[n - 1] = *w; /* b keeps the windows made, as the stubs' order */
		} else if (all) {
			return 0;
		}
	}
	for (size_t i = TAIL_SIZE + (size_t)n * STUB_SIZE; check && i < size; i++)
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
		void *m = zv_mmap((void *)base, size, PROT_READ | PROT_WRITE, REGION_FLAGS, -1, 0);
		if (zv_is_err((long)m))
			return 0;
		if ((uint64_t)m != base) { /* an old kernel that ignores NOREPLACE */
			zv_munmap(m, size);
			return 0;
		}
	} else if (!(base = place(lo, hi, size, b->span_lo, b->above))) {
		return 0;
	}
	uint8_t *r = (uint8_t *)base;
	int n = fill_region(b, lo, hi, base, size, all, r, NULL, 0, recs);
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
	int n = (uint64_t)m == base ? fill_region(b, lo, hi, base, size, 1, NULL, m, f->trusted, recs)
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
		if (z >= 0 && ip <= r->recs[z].s && !r->recs[z].restored)
			return r->lo + TAIL_SIZE + (uint64_t)z * STUB_SIZE + (ip - r->recs[z].p);
	}
	return ip;
}

/* Calls fn for each window or trampoline whose bytes meet [addr, addr + n). */
void zv_stubs_each_window(uint64_t addr, size_t n, void (*fn)(struct zv_stub_rec *w, void *arg), void *arg)
{
	int nr = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < nr; i++) {
		const struct region *r = &regions[i];
		if (addr + n + 200 <= r->code_lo || addr >= r->code_hi + 200)
			continue;
		for (int k = first_p(r->recs, r->n, sizeof *r->recs, addr > 200 ? addr - 200 : 0);
		     k < r->n && r->recs[k].p < addr + n + 200; k++) {
			struct rec *w = (struct rec *)&r->recs[k];
			if (!w->restored && (overlaps(w->p, w->s + 2 - w->p, addr, n) || (w->d && overlaps(w->d, 5, addr, n))))
				fn(w, arg);
		}
	}
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

/* An exec made in this process: the old images' regions are gone with
 * them; those serving code in [lo, hi) (the vDSO, which stays) are kept.
 * Their records stay mapped (kernel memory the next image does not read). */
void zv_stubs_exec(uint64_t lo, uint64_t hi)
{
	zv_lock(&regions_lock);
	int k = 0;
	unsigned long stubs = 0;
	for (int i = 0; i < nregions; i++)
		if (regions[i].code_lo >= lo && regions[i].code_hi <= hi) {
			regions[k++] = regions[i];
			stubs += (unsigned long)regions[i].n;
		}
	__atomic_store_n(&nregions, k, __ATOMIC_RELEASE);
	nstubs = stubs;
	zv_unlock(&regions_lock);
}

/* The regions kept by zv_stubs_exec, for the exec's unmapping. */
int zv_stubs_kept(uint64_t lo, uint64_t hi, uint64_t (*out)[2], int max)
{
	int k = 0;
	for (int i = 0; i < nregions && k < max; i++)
		if (regions[i].code_lo >= lo && regions[i].code_hi <= hi) {
			out[k][0] = regions[i].lo;
			out[k][1] = regions[i].hi;
			k++;
		}
	return k;
}

/* The bounce `syscall` (intercept/fastentry.S zv_fast_bounce): text's last
 * page, outside the kernel text that SUD and seccomp exempt, so that the
 * catch-all turns it into SIGSYS. */
extern char zv_bounce_page[];
uint64_t zv_stubs_bounce_site(void)
{
	return (uint64_t)zv_bounce_page;
}
