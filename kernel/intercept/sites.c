/* The syscall sites zvisor knows in this process: an open-addressing hash
 * table from a site's address to its state, shared by all threads (and
 * copied by fork). The fast path looks a return address up here to tell a
 * rewritten site (whose `call *%rax` came from a `syscall`) from a stray
 * call or jump into page 0, so the table only grows while the process
 * lives; execve starts a new one.
 *
 * Rewriting is one atomic 16-bit exchange (see rewrite()); a shared file
 * mapping is never written (mprotect refuses to make it writable). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/sites.h"
#include "lib/mutex.h"
#include "sys/procself.h"
#include <linux/mman.h>
#include <linux/fcntl.h>

#define TABLE_BITS 16
#define TABLE_SIZE (1UL << TABLE_BITS)
#define MAX_PROBE 64

struct site_table {
	uint64_t addr[TABLE_SIZE];   /* 0: empty */
	uint32_t state[TABLE_SIZE];  /* ZV_SITE_* flags, hit count above them */
	uint64_t print[TABLE_SIZE];  /* the 8 code bytes ending after the call */
};

static struct site_table *table;
static volatile int table_lock;
static unsigned long rewritten;

static inline uint64_t slot_of(uint64_t a)
{
	return (a * 0x9e3779b97f4a7c15UL) >> (64 - TABLE_BITS);
}

/* Code bytes as they were before zvisor rewrote anything in them: a
 * fingerprint may cover another site close by, rewritten later, whole or
 * only its second byte (d0 for 05) at the start. */
static uint64_t unrewritten(uint64_t v)
{
	if ((v & 0xff) == 0xd0)
		v = (v & ~0xffUL) | 0x05;
	for (int i = 0; i < 7; i++)
		if (((v >> (8 * i)) & 0xffff) == 0xd0ff)
			v = (v & ~(0xffffUL << (8 * i))) | (0x050fUL << (8 * i));
	return v;
}

/* Whether the `call *%rax` that returns to ret is one zvisor wrote: the
 * site is marked rewritten and the code around it is still what it was then
 * (JIT code replaced by code with its own `call *%rax` at the same place is
 * not). code8 is the 8 bytes ending at ret; both sides are compared as
 * they were before any rewriting. */
__attribute__((hot)) int zv_site_ours(uint64_t ret, uint64_t code8)
{
	struct site_table *tb = table;
	uint64_t a = ret - 2;
	if (!tb)
		return 0;
	uint64_t i = slot_of(a);
	for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (TABLE_SIZE - 1)) {
		uint64_t v = __atomic_load_n(&tb->addr[i], __ATOMIC_ACQUIRE);
		if (v == a)
			return (__atomic_load_n(&tb->state[i], __ATOMIC_ACQUIRE) & ZV_SITE_REWRITTEN) &&
			       __atomic_load_n(&tb->print[i], __ATOMIC_ACQUIRE) == unrewritten(code8);
		if (!v)
			return 0;
	}
	return 0;
}

/* The state word of site a, inserted when missing; NULL when full. */
static uint32_t *site_slot(uint64_t a)
{
	if (!table) {
		zv_lock(&table_lock);
		if (!table) {
			void *p = zv_kmap(sizeof(struct site_table), 4096, -1);
			if (!zv_is_err((long)p))
				__atomic_store_n(&table, p, __ATOMIC_RELEASE);
		}
		zv_unlock(&table_lock);
		if (!table)
			return NULL;
	}
	uint64_t i = slot_of(a);
	for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (TABLE_SIZE - 1)) {
		uint64_t v = __atomic_load_n(&table->addr[i], __ATOMIC_ACQUIRE);
		if (!v) {
			uint64_t expect = 0;
			if (__atomic_compare_exchange_n(&table->addr[i], &expect, a, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				return &table->state[i];
			v = expect;
		}
		if (v == a)
			return &table->state[i];
	}
	return NULL;
}

/* A site zvisor itself wrote as `call *%rax` (the vDSO's stubs, which sit
 * in a mapping the host does not let mprotect split): rewritten from the
 * start. Its 8 bytes ending after the call are already in place. */
void zv_site_add_rewritten(uint64_t site)
{
	uint32_t *st = site_slot(site);
	if (!st)
		return;
	uint64_t p;
	memcpy(&p, (const void *)(site - 6), 8);
	table->print[st - table->state] = unrewritten(p);
	__atomic_fetch_or(st, ZV_SITE_REWRITTEN, __ATOMIC_RELEASE);
}

unsigned long zv_sites_rewritten(void)
{
	return rewritten;
}

/* An exec made in this process: a new table (as execve starts one), with
 * the rewritten sites of [lo, hi) (the vDSO's stubs, which stay). */
void zv_sites_exec(uint64_t lo, uint64_t hi)
{
	struct site_table *old = table;
	rewritten = 0;
	if (!old)
		return;
	uint64_t keep[16];
	int n = 0;
	for (uint64_t i = 0; i < TABLE_SIZE && n < 16; i++)
		if (old->addr[i] >= lo && old->addr[i] < hi && (old->state[i] & ZV_SITE_REWRITTEN))
			keep[n++] = old->addr[i];
	table = NULL;
	zv_kunmap(old, sizeof *old);
	for (int i = 0; i < n; i++)
		zv_site_add_rewritten(keep[i]);
}

/* Writes the two bytes at site through /proc/self/mem, which writes any
 * private mapping (copying the page) but refuses read-only shared ones. */
static int poke_mem(uint64_t site, const uint16_t *v)
{
	long fd = zv_procself_mem();
	if (fd < 0)
		return 0;
	int ok = zv_sys4(__NR_pwrite64, fd, v, 2, site) == 2;
	zv_procself_mem_done(fd);
	return ok;
}

/* Guest memory through the calls that honour page protections. */
static long vm_io(long nr, uint64_t addr, void *buf, size_t len)
{
	struct { void *base; size_t len; } local = { buf, len }, remote = { (void *)addr, len };
	return zv_sys6(nr, zv_proc.hpid, (long)&local, 1, (long)&remote, 1, 0);
}

/* One rewrite at a time (they share pages), and none while a guest memory
 * call runs: the probe, the exchange and the restored protection must see
 * the same page (zv_sites_lock). */
static volatile int patch_lock;

/* Pages found private and not writable by an earlier rewrite: the next
 * rewrite there needs no probe. A page is a mapping's, so any guest memory
 * call (which may map, unmap or protect anything) forgets them all. Under
 * patch_lock. */
#define KNOWN_PAGES 16
static uint64_t known_pages[KNOWN_PAGES];
static unsigned nknown;

static int known_private_rx(uint64_t page)
{
	for (unsigned i = 0; i < nknown; i++)
		if (known_pages[i] == page)
			return 1;
	return 0;
}

void zv_sites_lock(void) { zv_mutex_lock(&patch_lock); }
void zv_sites_unlock(void)
{
	nknown = 0;
	zv_mutex_unlock(&patch_lock);
}

/* Whether the mapping holding addr is shared (/proc/self/maps' 's'). */
static int shared_if_holds(const struct zv_map *m, void *arg)
{
	uint64_t addr = *(uint64_t *)arg;
	return addr >= m->lo && addr < m->hi ? (m->perms[3] == 's' ? 1 : 2) : 0;
}

static int mapping_shared(uint64_t addr)
{
	return zv_maps_each(shared_if_holds, &addr) != 2; /* not found: leave it alone */
}

/* Rewrites site with one atomic 16-bit compare-and-exchange, so another
 * thread sees either `syscall` or the call, never half of each (a half
 * would be an invalid opcode, fatal to a thread that blocks SIGILL, as new
 * threads briefly do). A page that is not writable is made writable for
 * the exchange (keeping it executable for threads running it) and then
 * read-only again: executable pages here are readable (no protection keys),
 * so r-x is their protection. Its fingerprint (the 8 bytes ending after the
 * new call) is stored in *print before the call exists, so that no thread
 * runs the call before it is recognised as zvisor's. */
static int rewrite(struct zv_thread *t, uint64_t site, uint64_t *print)
{
	uint8_t b[8];
	if (vm_io(__NR_process_vm_readv, site - 6, b, 8) != 8)
		return 0;
	int fresh = b[6] == 0x0f && b[7] == 0x05;
	if (!fresh && !(b[6] == 0xff && b[7] == 0xd0))
		return 0; /* not a syscall any more */
	b[6] = 0xff;
	b[7] = 0xd0;
	uint64_t p;
	memcpy(&p, b, 8);
	__atomic_store_n(print, unrewritten(p), __ATOMIC_RELEASE);
	if (!fresh)
		return 1; /* another thread was first */
	int ok = 0;
	void *page = (void *)(site & ~4095UL); /* the site does not straddle a line */
	zv_mutex_lock(&patch_lock);
	/* Writable already? Writing the two bytes back unchanged tells (the
	 * call honours protections). A shared mapping is never written: the
	 * file's other mappings, in this process or others, would change too.
	 * /proc/self/mem refuses to write a read-only shared one. */
	uint16_t cur = 0x050f;
	int known = known_private_rx((uint64_t)page);
	int writable = !known && vm_io(__NR_process_vm_writev, site, &cur, 2) == 2;
	int shared = known ? 0 : writable ? mapping_shared(site) : !poke_mem(site, &cur);
	if (!known && !shared && !writable)
		known_pages[nknown++ % KNOWN_PAGES] = (uint64_t)page;
	if (!shared && (writable || zv_mprotect(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) == 0)) {
		/* Guarded: another thread may unmap or protect the page even
		 * now, with a call zvisor does not intercept (none exists
		 * today, but the guest's own threads run on). */
		uint64_t outer = t->guard_sp;
		ok = zv_cmpxchg16_guarded((volatile uint16_t *)site, 0x050f, 0xd0ff, &t->guard_sp) == 1;
		t->guard_sp = outer;
		if (!writable)
			zv_mprotect(page, 4096, PROT_READ | PROT_EXEC);
	}
	zv_mutex_unlock(&patch_lock);
	return ok;
}

/* In a fork child: the locks' holders do not exist there. (Written only
 * when held: a write would copy the page, which costs a fault per fork.) */
void zv_sites_after_fork(void)
{
	if (table_lock)
		table_lock = 0;
	if (patch_lock)
		patch_lock = 0;
}

/* A site that straddles a cache line: another core could fetch half of it
 * while it changes. */
static int straddles(uint64_t site) { return (site & 63) == 63; }

/* Where a site can never be rewritten. */
static int unpatchable(uint64_t site)
{
	return straddles(site) ||
	       (site & 4095) < 6; /* its fingerprint would start on the page before */
}

/* Rewrites site, whose state word st this thread holds busy. */
static void rewrite_marked(struct zv_thread *t, uint64_t site, uint32_t *st)
{
	/* Marked before the bytes change: another thread may run the new
	 * call as soon as it is written. */
	uint32_t old = __atomic_fetch_or(st, ZV_SITE_REWRITTEN, __ATOMIC_ACQ_REL);
	if (rewrite(t, site, &table->print[st - table->state])) {
		if (!(old & ZV_SITE_REWRITTEN))
			__atomic_fetch_add(&rewritten, 1, __ATOMIC_RELAXED);
	} else { /* not 0f 05 any more, or unwritable */
		__atomic_fetch_and(st, ~ZV_SITE_REWRITTEN, __ATOMIC_RELEASE);
		__atomic_fetch_or(st, ZV_SITE_NEVER, __ATOMIC_RELEASE);
	}
}

/* A site that executed `syscall` and reached the SIGSYS catch-all. It is
 * rewritten at its `after`-th arrival if it is safe to (safe() decides, it
 * may decode the code around it); concurrent arrivals at the same site see
 * ZV_SITE_BUSY and leave it to the first. A site marked rewritten that
 * arrives again holds `syscall` again (JIT code rewritten by the guest) and
 * is rewritten again. */
void zv_site_seen(uint64_t site, unsigned after, int (*safe)(uint64_t site, void *arg), void *arg)
{
	if (unpatchable(site))
		return;
	uint32_t *st = site_slot(site);
	if (!st)
		return;
	uint32_t s = __atomic_add_fetch(st, ZV_SITE_HIT, __ATOMIC_ACQ_REL);
	if (s & (ZV_SITE_BUSY | ZV_SITE_NEVER) || s / ZV_SITE_HIT < after)
		return;
	if (__atomic_fetch_or(st, ZV_SITE_BUSY, __ATOMIC_ACQ_REL) & ZV_SITE_BUSY)
		return;
	if (!safe(site, arg))
		__atomic_fetch_or(st, ZV_SITE_NEVER, __ATOMIC_RELEASE);
	else
		rewrite_marked(zv_current(), site, st);
	__atomic_fetch_and(st, ~ZV_SITE_BUSY, __ATOMIC_RELEASE);
}

/* Sites found in code just mapped, privately, with protection prot at
 * [lo, hi) (intercept/loadsites.c), and judged safe without having run:
 * all rewritten under one change of protection, by thread t (the loader
 * runs before the guest's first kernel entry, off the kernel stack). No
 * thread runs the code yet, and guest memory calls wait for patch_lock: so
 * a site that straddles a cache line is rewritten too, with a plain store
 * (a locked exchange across two lines would be a split lock). */
void zv_sites_load_batch(struct zv_thread *t, const uint64_t *sites, int n, uint64_t lo, uint64_t hi, int prot)
{
	if (n <= 0)
		return;
	zv_mutex_lock(&patch_lock);
	if ((prot & PROT_WRITE) || zv_mprotect((void *)lo, hi - lo, prot | PROT_WRITE) == 0) {
		for (int i = 0; i < n; i++) {
			uint64_t site = sites[i];
			uint32_t *st = (site & 4095) < 6 ? NULL : site_slot(site);
			if (!st || (__atomic_fetch_or(st, ZV_SITE_BUSY, __ATOMIC_ACQ_REL) & ZV_SITE_BUSY))
				continue;
			uint64_t p;
			memcpy(&p, (const void *)(site - 6), 8);
			if (!(*st & (ZV_SITE_NEVER | ZV_SITE_REWRITTEN)) && (p >> 48) == 0x050f) {
				__atomic_store_n(&table->print[st - table->state], unrewritten(p), __ATOMIC_RELEASE);
				__atomic_fetch_or(st, ZV_SITE_REWRITTEN, __ATOMIC_ACQ_REL);
				uint64_t outer = t->guard_sp;
				if (straddles(site))
					*(volatile uint16_t *)site = 0xd0ff;
				if (straddles(site) ||
				    zv_cmpxchg16_guarded((volatile uint16_t *)site, 0x050f, 0xd0ff, &t->guard_sp) == 1)
					__atomic_fetch_add(&rewritten, 1, __ATOMIC_RELAXED);
				else
					__atomic_fetch_and(st, ~ZV_SITE_REWRITTEN, __ATOMIC_RELEASE);
				t->guard_sp = outer;
			}
			__atomic_fetch_and(st, ~ZV_SITE_BUSY, __ATOMIC_RELEASE);
		}
		if (!(prot & PROT_WRITE))
			zv_mprotect((void *)lo, hi - lo, prot);
	}
	zv_mutex_unlock(&patch_lock);
}

