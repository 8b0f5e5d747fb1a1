/* The stubs platform, the default: sites become jumps to per-site stubs
 * beside their image (intercept/stubs.c), decided when the code is mapped
 * (intercept/loadsites.c finds the functions). Page 0 stays unmapped, so
 * NULL pointers fault as natively, and no privilege is needed. Sites found
 * only at run time (JIT code, code without function bounds) stay on the
 * SIGSYS catch-all: see DESIGN "Jump stubs and SUD off" for why. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "intercept/platform.h"
#include "intercept/sites.h"
#include "intercept/stubs.h"
#include "intercept/sitecache.h"
#include "intercept/sharedtext.h"
#include "intercept/sudoff.h"
#include <linux/mman.h>

static long arm_thread(struct zv_thread *t)
{
	long r = zv_fast_arm_thread(t, zv_stubs_bounce_site());
	return r < 0 ? r : zv_catchall_arm_thread(t);
}

/* The code of fd at [addr, addr + len) rewritten: the copy shared with
 * every other process (intercept/sharedtext.c) mapped over it, else its
 * windows written privately. unmapped: the loader's segment, not mapped
 * yet; a copy takes its place without the original's mapping first.
 * Returns addr, or -errno from the original's mapping. */
static long rewrite(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags,
		    int unmapped)
{
	struct zv_stub_batch *b = zv_proc.rewrite == ZV_REWRITE_NONE ? NULL : zv_stubs_batch_new();
	int shared = 0, memo = 0;
	if (b) {
		b->span_lo = off <= addr ? addr - off : 0;
		b->unmapped = unmapped;
		/* code without windows the tree already met has no copy to look for */
		memo = zv_sitecache_lookup_known(fd, addr, len, off, prot, b);
		if (!memo)
			shared = zv_sharedtext_map(fd, addr, len, off, prot, flags, b);
		if (shared == ZV_SHARED_MAPPED) {
			zv_sudoff_code(t, addr, addr + len, 0, b->inside, b->ninside, b->verdict);
			zv_stubs_batch_free(b);
			return (long)addr;
		}
		unmapped = b->unmapped; /* the copy's lookup may have mapped the original */
	}
	if (unmapped) {
		long r = (long)zv_mmap((void *)addr, len, prot, flags, fd, (long)off);
		if (zv_is_err(r)) {
			if (b)
				zv_stubs_batch_free(b);
			return r;
		}
	}
	if (zv_proc.rewrite == ZV_REWRITE_NONE)
		return (long)addr;
	if (!b) {
		zv_sudoff_taint(t, ZV_TAINT_UNREADABLE); /* not scanned */
		return (long)addr;
	}
	/* a cache hit: the pages to change are written first, then checked */
	int hit = memo || shared || zv_sitecache_lookup(fd, addr, len, off, prot, b);
	int opened = hit && b->n && zv_stubs_open(b, addr, addr + len, prot);
	if (hit && !zv_sitecache_check(fd, off, len, b)) {
		hit = 0;
		if (shared)
			zv_sharedtext_forget(fd, off, len);
	}
	if (!hit && opened) {
		zv_stubs_close(addr, addr + len, prot);
		opened = 0;
	}
	if (!hit) {
		zv_sites_load(t, fd, addr, len, off, prot, b);
		__atomic_add_fetch(&zv_proc.stat_analysed, 1, __ATOMIC_RELAXED);
	}
	/* the scan's verdict holds for the file's bytes with every window made */
	int want = b->n;
	int all = zv_stubs_commit(t, b, addr, addr + len, prot, opened ? ZV_STUBS_OPENED : 0) == want;
	if (opened)
		zv_stubs_close(addr, addr + len, prot);
	/* a decode's count comes from the pairs it met, not a scan of the code */
	long known = all && hit ? b->verdict : all && !hit && (prot & PROT_READ) ? zv_sudoff_count_batch(t, b, addr, addr + len) : -1;
	long v = zv_sudoff_code(t, addr, addr + len, (prot & PROT_WRITE) != 0, b->inside, b->ninside, known);
	/* The cache keeps the count even where this process did not scan (it
	 * was armed for good by an earlier mapping): an entry without one
	 * would make every later process scan the whole mapping again (about
	 * 2 ms for libc). An entry without one gets it now. */
	int counted = all && (!hit || b->verdict < 0) && !(prot & PROT_WRITE);
	if (counted && v < 0)
		v = known >= 0 ? known : zv_sudoff_count(addr, addr + len, b->inside, b->ninside);
	if (!hit || (counted && v >= 0)) {
		b->verdict = all ? v : -1;
		zv_sitecache_store(fd, addr, len, off, b);
	}
	if (all && !shared) /* no copy yet (a miss, or a copy dropped): this one */
		zv_sharedtext_store(fd, addr, len, off, prot, flags, b);
	zv_stubs_batch_free(b);
	return (long)addr;
}

static void code_mapped(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags)
{
	rewrite(t, fd, addr, len, off, prot, flags, 0);
}

static long map_code(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags)
{
	return rewrite(t, fd, addr, len, off, prot, flags, 1);
}

/* Each vDSO stub is one window: `mov $nr, %eax; syscall`. */
static void vdso_stubs(struct zv_thread *t, uint8_t *stubs, int n, int size)
{
	if (zv_proc.rewrite == ZV_REWRITE_NONE || n <= 0)
		return;
	struct zv_stub_batch *b = zv_stubs_batch_new();
	if (!b)
		return;
	for (int k = 0; k < n; k++)
		zv_stubs_function(b, stubs + k * size, (uint64_t)size, 0, (uint64_t)stubs + k * size);
	zv_stubs_commit(t, b, (uint64_t)stubs, (uint64_t)stubs + (uint64_t)n * size, 0, 1);
	zv_stubs_batch_free(b);
}

/* The host's own vDSO code: its syscalls are fallbacks (a clock the vDSO
 * cannot read, getrandom). Made into stubs only when the kernel does not
 * call that code itself (zv_proc.host_vdso), which a stub would re-enter. */
static void vdso_code(struct zv_thread *t, uint8_t *base, uint64_t size, const uint64_t (*fn)[2], int n, int rewrite)
{
	struct zv_stub_batch *b = zv_sudoff_never ? NULL : zv_stubs_batch_new();
	if (!b)
		return;
	b->above = 1;
	/* the same bytes in every process: decoded once, then from the cache */
	uint64_t hash = rewrite ? zv_sitecache_hash(base, size) : 0;
	int hit = rewrite && zv_sitecache_lookup_bytes(hash, base, size, b);
	for (int k = 0; rewrite && !hit && k < n; k++)
		zv_stubs_function(b, base + fn[k][0], fn[k][1], 0, (uint64_t)base + fn[k][0]);
	/* as for files: the scan's count holds once every window is made */
	int made = rewrite ? zv_stubs_commit(t, b, (uint64_t)base, (uint64_t)base + size, PROT_READ | PROT_EXEC, 1) : -1;
	int all = made == b->n;
	long count = zv_sudoff_vdso(t, (uint64_t)base, (uint64_t)base + size, b->inside, b->ninside,
				hit && all ? b->verdict : -1);
	if (rewrite && (!hit || (b->verdict < 0 && all && count >= 0))) { /* an entry without a count gets one */
		b->verdict = all ? count : -1;
		zv_sitecache_store_bytes(hash, base, size, b);
	}
	zv_stubs_batch_free(b);
}

/* The vDSO's host code is covered only while SUD may still go off. */
static int vdso_code_wanted(void) { return !zv_sudoff_never; }

/* The children share what they learn of code without windows. */
static void before_fork(void)
{
	if (zv_proc.rewrite != ZV_REWRITE_NONE && !zv_proc.no_cache)
		zv_sitememo_before_fork();
}

ZV_PLATFORM(stubs, 3) = {
	.name = "stubs",
	ZV_PLATFORM_COMMON,
	ZV_PLATFORM_FAST,
	.arm_thread = arm_thread,
	.code_mapped = code_mapped,
	.map_code = map_code,
	.vdso_stubs = vdso_stubs,
	.vdso_code = vdso_code,
	.mm_before = zv_sudoff_mm_before,
	.mm_after = zv_sudoff_mm_after,
	.fault = zv_sudoff_fault,
	.vdso_code_wanted = vdso_code_wanted,
	.reserved = zv_stubs_regions,
	.guest_ip = zv_stubs_guest_ip,
	.resume_ip = zv_stubs_resume_ip,
	.show_original = zv_stubs_show_original,
	.restore_original = zv_stubs_restore_original,
	.before_fork = before_fork,
};
