#include "lib/kmem.h"
#include "lib/syscall.h"
#include <linux/mman.h>

/* A bump pointer over the window, from the end of the image
 * (kernel/zvisor.ld's zv_kmem_start); holes left by unmapping are not reused
 * (the window is a terabyte). A fork child inherits it. Starting right
 * after the image puts the first chunk's pages (the first thread block,
 * the proc page, the scratch) in the image's 2 MiB of page table: the
 * process needs one page-table page there, not a second page of page
 * middle directory and of page table that every fork allocates, copies
 * and frees again. */
extern char zv_kmem_start[] __attribute__((weak)); /* absent in unit tests */
static uint64_t next = (uint64_t)zv_kmem_start;

static uint64_t window_first(void)
{
	return zv_kmem_start ? (uint64_t)zv_kmem_start : ZV_KWIN_START + 0x1000000000UL;
}

/* Small requests come from 4 MiB chunks of the window, each
 * mapped whole by one mmap the first time a request falls in it: a new
 * image's start made six mmaps where it now makes one, and each rewritten
 * mapping one or two more. NORESERVE and untouched, a chunk's spare pages
 * cost nothing. A small range never straddles two chunks and a large one
 * has its chunks to itself, so whatever lies in a chunk came from its one
 * mapping: an mmap of it that meets EEXIST means another thread (or CLONE_VM
 * child) mapped it, every range in it included, and the caller's range is
 * usable at once. Waiting for that thread to say so failed under load, and
 * the ranges then handed out ran out of tries (ENOMEM: posix_spawn from 8
 * threads failed 1 in 1000). chunk_mapped is the chunk mapped last, known
 * without a call. */
#define CHUNK (4UL << 20)
#define SMALL(size) ((size) <= CHUNK / 4)
static uint64_t chunk_mapped; /* its address, or 0 */

/* 1 if [at, at + size) is mapped by its chunk, now or before; 2 if its
 * first hole bytes were left out of the chunk's mapping (the image's
 * chunk, mapped by this call: a guard that needs no munmap); 0 for a large
 * range; a host error if the chunk could not be mapped. */
static long from_chunk(uint64_t at, size_t size, size_t hole)
{
	uint64_t c = at & ~(CHUNK - 1);
	if (!SMALL(size))
		return 0;
	if (c == __atomic_load_n(&chunk_mapped, __ATOMIC_ACQUIRE))
		return 1;
	/* The first chunk holds the image: it is mapped from its first request
	 * on (a process's first, made before it has a second thread), so that
	 * a hole there (the first thread block's guard) is below the mapping
	 * and does not split it. */
	int holed = c < window_first() && hole && hole < size;
	uint64_t lo = c < window_first() ? (at & ~4095UL) + (holed ? hole : 0) : c;
	void *p = zv_mmap((void *)lo, c + CHUNK - lo, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
	if ((uint64_t)p == lo) {
		__atomic_store_n(&chunk_mapped, c, __ATOMIC_RELEASE);
		return holed ? 2 : 1;
	}
	if (!zv_is_err((long)p))
		zv_munmap(p, c + CHUNK - lo); /* an old kernel ignoring NOREPLACE: taken */
	else if (p != (void *)-EEXIST)
		return (long)p;
	return 1;
}

/* The range's start for a request at cur: a small one moves to the next
 * chunk rather than straddle two, a large one starts a chunk. */
static uint64_t place(uint64_t cur, size_t size, size_t align)
{
	if (!SMALL(size) && align < CHUNK)
		align = CHUNK;
	uint64_t at = (cur + align - 1) & ~(align - 1);
	if (((at + size - 1) & ~(CHUNK - 1)) != (at & ~(CHUNK - 1)) && SMALL(size))
		at = (at + CHUNK - 1) & ~(CHUNK - 1);
	return at;
}

static void *kmap(size_t size, size_t align, int fd, size_t hole, int *holed)
{
	size = (size + 4095) & ~4095UL;
	uint64_t cur = __atomic_load_n(&next, __ATOMIC_RELAXED), at, end;
	if (!cur) { /* unit tests: no linker-script symbol */
		__atomic_compare_exchange_n(&next, &cur, window_first(), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		cur = __atomic_load_n(&next, __ATOMIC_RELAXED);
	}
	do {
		at = place(cur, size, align);
		end = SMALL(size) ? at + size : (at + size + CHUNK - 1) & ~(CHUNK - 1);
	} while (!__atomic_compare_exchange_n(&next, &cur, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (end > ZV_KWIN_END)
		return (void *)-ENOMEM;
	/* a range of a mapped chunk is this caller's: a file may replace it */
	long ours = from_chunk(at, size, fd < 0 ? hole : 0);
	if (ours < 0)
		return (void *)ours;
	*holed = ours == 2;
	if (ours && fd < 0)
		return (void *)at;
	int flags = (fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS) | MAP_NORESERVE |
		    (ours ? MAP_FIXED : MAP_FIXED_NOREPLACE);
	void *p = zv_mmap((void *)at, size, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (!zv_is_err((long)p) && (uint64_t)p != at) {
		zv_munmap(p, size); /* an old kernel ignoring NOREPLACE */
		return (void *)-EEXIST;
	}
	return p;
}

void *zv_kmap(size_t size, size_t align, int fd)
{
	int holed;
	return kmap(size, align, fd, 0, &holed);
}

void *zv_kmap_guarded(size_t size, size_t align, size_t guard)
{
	int holed = 0;
	void *p = kmap(size, align, -1, guard, &holed);
	if (!zv_is_err((long)p) && !holed)
		zv_munmap(p, guard);
	return p;
}

void zv_kunmap(void *p, size_t size)
{
	zv_munmap(p, (size + 4095) & ~4095UL);
}
