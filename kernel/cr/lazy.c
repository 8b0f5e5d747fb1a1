/* Anonymous memory mapped from a checkpoint's image (cr/lazy.h): the
 * calls that would tell it from anonymous memory, and a checkpoint of it.
 *
 * A layer, on only while such mappings may exist, sees madvise and
 * mremap:
 * - MADV_DONTNEED, MADV_DONTNEED_LOCKED and MADV_FREE would read the file
 *   again where anonymous memory reads zeros: the part of the range that is
 *   mapped from the image becomes anonymous zeros first (MADV_FREE's pages
 *   may be freed at any time; they are at once);
 * - MADV_WIPEONFORK, MADV_KEEPONFORK and MADV_REMOVE answer by the kind of
 *   mapping: that part becomes anonymous memory with the same bytes first,
 *   and the host then answers as for anonymous memory;
 * - mremap: what a grown mapping gains reads zeros (a file mapping would
 *   show the file's next pages), as does the old range MREMAP_DONTUNMAP
 *   leaves behind.
 * Made anonymous, a piece loses what the host kept of its mapping
 * (mlock, MADV_DONTFORK): none of these calls is usual on such memory. */
#include "zvisor.h"
#include "cr/lazy.h"
#include "cr/memory.h"
#include "sys/layer.h"
#include "sys/filemem.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <asm/unistd_64.h>
#include <asm/stat.h>
#include <linux/mman.h>
#include <linux/fcntl.h>

#define PAGE 4096UL
#define MADV_DONTNEED_LOCKED_ 24
#define SEEK_DATA_ 3
#define SEEK_HOLE_ 4

/* Where such mappings may be: a superset (mremap adds), never shrunk. */
static unsigned nranges, cap;
static uint64_t (*ranges)[2];

static void add_range(uint64_t lo, uint64_t hi)
{
	if (nranges == cap) {
		unsigned c = cap ? cap * 2 : 64;
		uint64_t (*r)[2] = zv_kmap(c * sizeof *r, 4096, -1);
		if (zv_is_err((long)r))
			return;
		if (nranges)
			memcpy(r, ranges, nranges * sizeof *r);
		if (cap)
			zv_kunmap(ranges, cap * sizeof *r);
		ranges = r;
		cap = c;
	}
	ranges[nranges][0] = lo;
	ranges[nranges][1] = hi;
	nranges++;
}

void zv_cr_lazy_adopt(uint64_t st_dev, uint64_t ino, const char *path, const uint64_t (*r)[2], unsigned n)
{
	/* the kernel's data is the image's: what it held was another restore's */
	nranges = cap = 0;
	ranges = NULL;
	zv_filemem_set(st_dev, n ? ino : 0, path);
	for (unsigned i = 0; i < n; i++)
		add_range(r[i][0], r[i][1]);
	zv_layers_fold();
}

static int overlaps(uint64_t lo, uint64_t hi)
{
	for (unsigned i = 0; i < nranges; i++)
		if (lo < ranges[i][1] && hi > ranges[i][0])
			return 1;
	return 0;
}

/* The image's pieces of [lo, hi) become anonymous: zeros, or (keep) the
 * same bytes. */
static void make_anonymous(uint64_t lo, uint64_t hi, int keep)
{
	uint64_t maplen;
	char *maps = zv_cr_read_maps("/proc/self/maps", &maplen);
	if (!maps)
		return;
	struct zv_cr_mapline m;
	for (const char *p = maps; zv_cr_maps_next(&p, &m) == 0;) {
		if (m.hi <= lo || m.lo >= hi || !zv_filemem_is(m.dev_major, m.dev_minor, m.inode))
			continue;
		uint64_t a = m.lo > lo ? m.lo : lo, b = m.hi < hi ? m.hi : hi, len = b - a;
		/* natively the mapping goes on across the cuts (sys/procview_anon.c) */
		if (a > m.lo)
			zv_filemem_cut(a);
		if (b < m.hi)
			zv_filemem_cut(b);
		int prot = (m.perms[0] == 'r' ? PROT_READ : 0) | (m.perms[1] == 'w' ? PROT_WRITE : 0) |
			   (m.perms[2] == 'x' ? PROT_EXEC : 0);
		if (!keep) {
			zv_mmap((void *)a, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			continue;
		}
		void *tmp = zv_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (zv_is_err((long)tmp))
			continue;
		if (!(prot & PROT_READ))
			zv_mprotect((void *)a, len, prot | PROT_READ);
		memcpy(tmp, (const void *)a, len);
		zv_mprotect(tmp, len, prot);
		if (zv_is_err((long)zv_sys5(__NR_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, a))) {
			zv_munmap(tmp, len);
			if (!(prot & PROT_READ))
				zv_mprotect((void *)a, len, prot);
		}
	}
	zv_kunmap(maps, maplen);
}

static long call(struct zv_call *c)
{
	uint64_t a = (uint64_t)c->a[0], len = ((uint64_t)c->a[1] + PAGE - 1) & ~(PAGE - 1);
	if (c->nr == __NR_madvise) {
		int adv = (int)c->a[2];
		int zero = adv == MADV_DONTNEED || adv == MADV_DONTNEED_LOCKED_ || adv == MADV_FREE;
		int keep = adv == MADV_WIPEONFORK || adv == MADV_KEEPONFORK || adv == MADV_REMOVE;
		if ((zero || keep) && !(a & (PAGE - 1)) && a + len > a && overlaps(a, a + len))
			make_anonymous(a, a + len, keep);
		return zv_next(c);
	}
	uint64_t nlen = ((uint64_t)c->a[2] + PAGE - 1) & ~(PAGE - 1);
	int ours = !(a & (PAGE - 1)) && a + len > a && overlaps(a, a + len);
	long r = zv_next(c);
	if (ours && !zv_is_err(r)) {
		add_range((uint64_t)r, (uint64_t)r + nlen);
		if ((uint64_t)r != a)
			zv_filemem_moved(a, a + len, (uint64_t)r);
		if (c->a[3] & MREMAP_DONTUNMAP)
			make_anonymous(a, a + len, 0);
		if (nlen > len)
			make_anonymous((uint64_t)r + len, (uint64_t)r + nlen, 0);
	}
	return r;
}

static int active(void) { return zv_filemem.ino != 0; }
static int sees(long nr) { return nr == __NR_madvise || nr == __NR_mremap; }

ZV_LAYER(cr_lazy, 750) = { .name = "cr-lazy", .sees = sees, .active = active, .call = call };

/* --- a checkpoint of such memory --- */

void zv_cr_holes_open(struct zv_cr_holes *h)
{
	*h = (struct zv_cr_holes){ .fd = -1 };
	if (!zv_filemem.ino)
		return;
	long fd = zv_openat(AT_FDCWD, zv_filemem.path, O_RDONLY | O_CLOEXEC, 0);
	struct stat st;
	if (fd >= 0 && (zv_sys2(__NR_fstat, fd, &st) < 0 || st.st_ino != zv_filemem.ino || st.st_dev != zv_filemem.st_dev)) {
		zv_close((int)fd);
		fd = -1;
	}
	h->fd = (int)fd;
}

int zv_cr_holes_data(struct zv_cr_holes *h, uint64_t off)
{
	if (h->fd < 0)
		return 1;
	if (off >= h->lo && off < h->hi)
		return h->data;
	long d = zv_sys3(__NR_lseek, h->fd, (long)off, SEEK_DATA_);
	if (d == -ENXIO) { /* no data from here on */
		h->lo = off;
		h->hi = ~0UL;
		h->data = 0;
	} else if (d < 0) { /* the filesystem cannot tell: all of it is data */
		h->lo = 0;
		h->hi = ~0UL;
		h->data = 1;
	} else if ((uint64_t)d > off) {
		h->lo = off;
		h->hi = (uint64_t)d;
		h->data = 0;
	} else {
		long e = zv_sys3(__NR_lseek, h->fd, (long)off, SEEK_HOLE_);
		h->lo = off;
		h->hi = e > (long)off ? (uint64_t)e : off + PAGE;
		h->data = 1;
	}
	return h->data;
}

void zv_cr_holes_close(struct zv_cr_holes *h)
{
	if (h->fd >= 0)
		zv_close(h->fd);
	h->fd = -1;
}
