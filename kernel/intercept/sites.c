/* The syscall sites zvisor knows in this process: an open-addressing hash
 * table from a site's address to its state, shared by all threads (and
 * copied by fork). The fast path looks a return address up here to tell a
 * rewritten site (whose `call *%rax` came from a `syscall`) from a stray
 * call or jump into page 0, so the table only grows while the process
 * lives; execve starts a new one.
 *
 * Rewriting writes through /proc/self/mem, which changes no page
 * protection (a W^X page stays W^X, read-only text gets a private copy) and
 * never writes a shared file mapping. The two bytes are written one at a
 * time, second first: another thread sees 0f 05 (syscall: SIGSYS), 0f d0 (an
 * invalid opcode: SIGILL, which the kernel answers by retrying, see
 * zv_site_retry) or ff d0 (the call), never ff 05 (an `inc` of memory). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "intercept/sites.h"
#include <linux/fcntl.h>

#define TABLE_BITS 16
#define TABLE_SIZE (1UL << TABLE_BITS)
#define MAX_PROBE 64

struct site_table {
	uint64_t addr[TABLE_SIZE];   /* 0: empty */
	uint32_t state[TABLE_SIZE];  /* ZV_SITE_* flags, hit count above them */
};

static struct site_table *table;
static volatile int table_lock;
static unsigned long rewritten;

static inline uint64_t slot_of(uint64_t a)
{
	return (a * 0x9e3779b97f4a7c15UL) >> (64 - TABLE_BITS);
}

/* The state of site a, or 0 when it is not in the table. Lock-free. */
__attribute__((hot)) uint32_t zv_site_state(uint64_t a)
{
	struct site_table *tb = table;
	if (!tb || !a)
		return 0;
	uint64_t i = slot_of(a);
	for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (TABLE_SIZE - 1)) {
		uint64_t v = __atomic_load_n(&tb->addr[i], __ATOMIC_ACQUIRE);
		if (v == a)
			return __atomic_load_n(&tb->state[i], __ATOMIC_ACQUIRE);
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

/* In a fork child: the lock's holder may not exist there. */
void zv_sites_after_fork(void)
{
	table_lock = 0;
}

unsigned long zv_sites_rewritten(void)
{
	return rewritten;
}

/* Writes len bytes at addr through /proc/self/mem (opened anew: a fork
 * child's inherited descriptor would still name the parent's memory). */
static int poke(int fd, uint64_t addr, const void *b, size_t len)
{
	return zv_sys4(__NR_pwrite64, fd, b, len, addr) == (long)len;
}

static int rewrite(uint64_t site)
{
	long fd = zv_openat(AT_FDCWD, "/proc/self/mem", O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	uint8_t b[2];
	int ok = zv_sys4(__NR_pread64, fd, b, 2, site) == 2;
	if (ok && !(b[0] == 0xff && b[1] == 0xd0)) /* else another thread was first */
		ok = b[0] == 0x0f && b[1] == 0x05 && poke((int)fd, site + 1, "\xd0", 1) &&
		     poke((int)fd, site, "\xff", 1);
	zv_close((int)fd);
	return ok;
}

/* A site that executed `syscall` and reached the SIGSYS catch-all. It is
 * rewritten at its `after`-th arrival if it is safe to (safe() decides, it
 * may decode the code around it); concurrent arrivals at the same site see
 * ZV_SITE_BUSY and leave it to the first. A site marked rewritten that
 * arrives again holds `syscall` again (JIT code rewritten by the guest) and
 * is rewritten again. */
void zv_site_seen(uint64_t site, unsigned after, int (*safe)(uint64_t site, void *arg), void *arg)
{
	if ((site & 63) == 63)
		return; /* straddles a cache line: another core could fetch half of it */
	uint32_t *st = site_slot(site);
	if (!st)
		return;
	uint32_t s = __atomic_add_fetch(st, ZV_SITE_HIT, __ATOMIC_ACQ_REL);
	if (s & (ZV_SITE_BUSY | ZV_SITE_NEVER) || s / ZV_SITE_HIT < after)
		return;
	if (__atomic_fetch_or(st, ZV_SITE_BUSY, __ATOMIC_ACQ_REL) & ZV_SITE_BUSY)
		return;
	if (!safe(site, arg)) {
		__atomic_fetch_or(st, ZV_SITE_NEVER, __ATOMIC_RELEASE);
	} else {
		/* Marked before the bytes change: another thread may run the
		 * new call as soon as it is written. */
		uint32_t old = __atomic_fetch_or(st, ZV_SITE_REWRITTEN, __ATOMIC_ACQ_REL);
		if (rewrite(site)) {
			if (!(old & ZV_SITE_REWRITTEN))
				__atomic_fetch_add(&rewritten, 1, __ATOMIC_RELAXED);
		} else { /* not 0f 05 any more, or unwritable */
			__atomic_fetch_and(st, ~ZV_SITE_REWRITTEN, __ATOMIC_RELEASE);
			__atomic_fetch_or(st, ZV_SITE_NEVER, __ATOMIC_RELEASE);
		}
	}
	__atomic_fetch_and(st, ~ZV_SITE_BUSY, __ATOMIC_RELEASE);
}

/* A SIGILL at ip: an instruction another thread was rewriting (0f d0 seen
 * between the two writes). Returns 1 if the guest should simply retry. */
int zv_site_retry(uint64_t ip)
{
	uint32_t s = zv_site_state(ip);
	return (s & (ZV_SITE_BUSY | ZV_SITE_REWRITTEN)) != 0;
}
