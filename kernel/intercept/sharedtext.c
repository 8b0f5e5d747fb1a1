/* Rewritten code shared across processes through the page cache (DESIGN
 * "The site cache and shared text"). Writing the windows into a private
 * copy of libc's text costs every process about 70 copy-on-write faults and
 * 290 KiB of anonymous memory, which every fork copies the page table
 * entries of again. Instead, a file in the cache directory holds, at the
 * same file offsets as the mapped range of the original, its bytes with the
 * windows written (a sparse file: the offsets, and the guest-visible offset
 * column of /proc/self/maps, stay the original's), followed (page-aligned)
 * by a trailer: the key, the stub region's offset from the mapping, the
 * windows in their stubs' order and the original's path; then, at the next
 * page, the stub region's bytes (position-independent but for zvisor's
 * entry, which is part of the key). A hit maps that range privately over
 * the guest's mapping, with its stubs mapped from the same file at the
 * recorded offset (the jumps are relative), once the stubs the windows
 * make there are checked equal to the mapped ones (unless the copy's mark
 * holds: zvisor wrote it so, every window made, and nothing since): open, fstat, one read
 * of the trailer (two for a large one), the readlink of the guest's fd
 * (the name this process shows), the two mmaps and close. The stub pages are then the page
 * cache's: no anonymous memory, and no page table entries a fork copies.
 *
 * The copy is keyed by the original's identity (device, inode, size, mtime,
 * ctime), the range and the stubs' format (ZV_STUBS_FORMAT), opened
 * O_NOFOLLOW, and used only if it is the user's own and writable by no one
 * else (otherwise left alone: a root run with a user's HOME must not
 * remove that user's copies), exactly as long as its trailer says and its
 * trailer's sum holds (otherwise one line and the file removed). Written on a miss, from
 * the mapping whose windows were just written, to a temporary name renamed
 * into place, within the directory's bound (intercept/cachecap.c). The
 * guest sees the original: sys/procview_maps.c and cr/memory.c ask
 * zv_sharedtext_original for the original of a mapping of a copy. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/devnum.h"
#include "lib/fdlist.h"
#include "intercept/sitecache.h"
#include "intercept/sharedtext.h"
#include "intercept/cachecap.h"
#include "intercept/stubs.h"
#include "arch/fast.h"
#include <asm/stat.h>
#include <linux/fcntl.h>
#include <linux/mman.h>

/* "ZCOPY", the stubs' format, the analysis' version and zvisor's entry, which the
 * stub region's tail holds (another build maps other copies) */
#define MAGIC_COPY (0x59504f435aULL ^ (ZV_STUBS_FORMAT << 24) ^ ((uint64_t)zv_stub_entry << 1) ^ ZV_ANALYSIS_VERSION << 58)
#define HEAD 4096UL  /* the trailer's first page: struct trailer */
#define MAX_PATH 240 /* the original's path, as the host names it */
#define MAX_ORIGS 64 /* copies mapped in one image */
#define FIRST_READ 40960UL /* a trailer's first read: most trailers whole (libc's: 33 KB here) */

struct trailer {
	struct zv_cache_key key;
	int64_t region;       /* the stub region's address minus the mapping's */
	uint64_t nw, ninside; /* windows (file offsets), then pairs proven inside instructions */
	uint64_t verdict;     /* intercept/sudoff.c's count, as in the windows' entries */
	uint64_t sum;         /* of the trailer, with this field 0 */
	uint64_t pathlen;
	char path[MAX_PATH + 8];
};
_Static_assert(sizeof(struct trailer) <= HEAD && sizeof(struct zv_stub_window) % 8 == 0, "trailer layout");

/* The copies this image maps, by the copy's device and inode: what the
 * guest must be shown instead. Appended only. */
static struct orig {
	uint64_t cdev, cino, dev, ino;
	char cname[24]; /* the copy's file name */
	char path[MAX_PATH + 8];
} origs[MAX_ORIGS] ZV_COLD_BSS;
static int norigs;
static volatile int origs_lock;

/* An exec made in this process: the copies were the old images'. */
void zv_sharedtext_exec(void)
{
	norigs = 0;
}

static uint64_t mix(uint64_t h, const void *v, uint64_t n)
{
	const uint8_t *p = v;
	uint64_t w;
	for (uint64_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	return h;
}

/* Whether a mapping may be a copy: readable, never written through, of
 * plain private flags (a copy mapped over loses the guest's others), its
 * pages all within the file (natively a page past the end is SIGBUS; the
 * copy has its trailer there). */
static int eligible(int fd, uint64_t off, uint64_t len, int prot, int flags, struct zv_stub_batch *b,
		    struct zv_cache_key *k)
{
	int extra = flags & ~(MAP_TYPE | MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_DENYWRITE | MAP_EXECUTABLE);
	return zv_sitecache_cap() && zv_sitecache_dir()[0] && (prot & PROT_READ) && !(prot & PROT_WRITE) && (flags & MAP_TYPE) == MAP_PRIVATE &&
	       !extra && !(off & 4095) && !(len & 4095) && zv_sitecache_key(fd, b, MAGIC_COPY, off, len, k) &&
	       k->off + k->len <= ((k->size + 4095) & ~4095UL);
}

const char *zv_sharedtext_original(uint64_t cmajor, uint64_t cminor, uint64_t cino, uint64_t *major, uint64_t *minor,
				   uint64_t *ino)
{
	int n = __atomic_load_n(&norigs, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		uint64_t cdev = origs[i].cdev;
		if (origs[i].cino == cino && zv_dev_major(cdev) == cmajor && zv_dev_minor(cdev) == cminor) {
			*major = zv_dev_major(origs[i].dev);
			*minor = zv_dev_minor(origs[i].dev);
			*ino = origs[i].ino;
			return origs[i].path;
		}
	}
	return NULL;
}

int zv_sharedtext_still_there(const char *path, const uint64_t *id)
{
	struct stat st;
	if (zv_sys4(__NR_newfstatat, AT_FDCWD, path, &st, 0) != 0)
		return 0;
	return !id || (zv_dev_major(st.st_dev) == id[0] && zv_dev_minor(st.st_dev) == id[1] && st.st_ino == id[2]);
}

const char *zv_sharedtext_named(const char *name, size_t n)
{
	int k = __atomic_load_n(&norigs, __ATOMIC_ACQUIRE);
	const char *slash = NULL;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/')
			slash = name + i + 1;
	for (int i = 0; slash && i < k; i++) {
		size_t cl = zv_strlen(origs[i].cname), rest = n - (size_t)(slash - name);
		/* numa_maps escapes the space of " (deleted)" */
		if (rest >= cl && !memcmp(slash, origs[i].cname, cl) &&
		    (rest == cl || (rest == cl + 13 && !memcmp(slash + cl, "\\040(deleted)", 13))))
			return origs[i].path;
	}
	return NULL;
}

/* The original's path as the host names it (its maps line): one that
 * numa_maps would escape, or deleted, is not stored. */
static int original_path(int fd, char *out)
{
	char link[40];
	zv_snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	long n = zv_sys3(__NR_readlink, link, out, MAX_PATH);
	if (n <= 0 || n >= MAX_PATH || out[0] != '/')
		return -1;
	out[n] = 0;
	for (long i = 0; i < n; i++)
		if (out[i] == ' ' || out[i] == '\t' || out[i] == '\n' || out[i] == '=' || out[i] == '\\')
			return -1;
	return 0;
}

static void remember(uint64_t cdev, uint64_t cino, const struct trailer *t, const char *cpath, const char *path)
{
	uint64_t ma, mi, ino;
	zv_lock(&origs_lock);
	if (!zv_sharedtext_original(zv_dev_major(cdev), zv_dev_minor(cdev), cino, &ma, &mi, &ino) && norigs < MAX_ORIGS) {
		struct orig *o = &origs[norigs];
		*o = (struct orig){ cdev, cino, t->key.dev, t->key.ino, "", "" };
		zv_strlcpy(o->cname, zv_strrchr(cpath, '/') + 1, sizeof o->cname);
		zv_strlcpy(o->path, path, sizeof o->path);
		__atomic_store_n(&norigs, norigs + 1, __ATOMIC_RELEASE);
	}
	zv_unlock(&origs_lock);
}

struct mapping {
	uint64_t addr, len, off;
	int prot, cfd, failed;
};

/* zv_stubs_commit_at's last step: the copy over the guest's mapping. */
static int map_copy(void *v)
{
	struct mapping *m = v;
	long r = (long)zv_mmap((void *)m->addr, m->len, m->prot, MAP_PRIVATE | MAP_FIXED, m->cfd, (long)m->off);
	m->failed = r != (long)m->addr;
	return !m->failed;
}

static uint64_t page_up(uint64_t n) { return (n + 4095) & ~4095UL; }

/* The trailer read into buf (got bytes of it, maybe some of the stub
 * region after it) as b's windows and pairs, at addr; the reason if it
 * does not check out. */
static const char *unpack(const struct zv_cache_key *k, uint8_t *buf, long got, uint64_t size, uint64_t addr,
			  struct zv_stub_batch *b)
{
	struct trailer *t = (struct trailer *)buf;
	uint64_t off = k->off, len = k->len, ws = sizeof(struct zv_stub_window);
	if (got < (long)HEAD)
		return "truncated";
	if (t->nw > (uint64_t)b->max - HEAD / ws || t->ninside > (uint64_t)b->maxinside)
		return "too many windows";
	const uint64_t nw = t->nw, ninside = t->ninside; /* t is overwritten by the windows below */
	uint64_t tlen = HEAD + nw * ws + ninside * 8, all = page_up(tlen) + zv_stubs_region_size((int)nw);
	if ((uint64_t)got < tlen || size != off + len + all)
		return "wrong size";
	uint64_t sum = t->sum;
	t->sum = 0;
	if (mix(0x9e3779b97f4a7c15ULL, buf, tlen) != sum)
		return "bad sum";
	if (t->pathlen >= MAX_PATH || t->path[t->pathlen] || t->path[0] != '/' || t->region & 4095)
		return "bad header";
	const uint64_t *in = (const uint64_t *)(buf + HEAD + nw * ws);
	for (uint64_t i = 0; i < ninside; i++) {
		if (in[i] < off || in[i] - off > len - 2)
			return "bad pair";
		b->inside[i] = addr + (in[i] - off);
	}
	b->ninside = (int)ninside;
	memmove(b->w, buf + HEAD, nw * ws);
	for (uint64_t i = 0; i < nw; i++) {
		struct zv_stub_window *w = &b->w[i];
		if (w->p < off || w->p - off >= len || w->s < w->p || w->s - off >= len || (w->d && (w->d < off || w->d - off >= len)))
			return "bad window";
		w->p = addr + (w->p - off);
		w->s = addr + (w->s - off);
		w->d = w->d ? addr + (w->d - off) : 0;
	}
	b->n = (int)nw;
	return NULL;
}

/* Whether the copy (cfd) holds at [off, off + len) exactly the original's
 * (fd) bytes with b's windows written (stubs from the region at base, in
 * b's order), the mapping at addr: read and compared a chunk at a time,
 * in the batch's scratch bitmaps. Bytes past the original's end are
 * zeros, as its mapping shows them. */
static int same_as_original(long cfd, int fd, uint64_t off, uint64_t len, uint64_t addr, uint64_t base,
			    struct zv_stub_batch *b)
{
	uint8_t *want = b->starts, *got = b->targets;
	uint64_t chunk = b->bitmap_bytes & ~4095UL;
	for (uint64_t o = off; o < off + len; o += chunk) {
		uint64_t n = off + len - o < chunk ? off + len - o : chunk;
		long r = zv_sys4(__NR_pread64, fd, want, n, o);
		if (r < 0 || zv_sys4(__NR_pread64, cfd, got, n, o) != (long)n)
			return 0;
		memset(want + r, 0, n - (uint64_t)r);
		for (int i = 0; i < b->n; i++) {
			const struct zv_stub_window *w = &b->w[i];
			zv_stubs_window_bytes(w->p, w->s, w->d, zv_stubs_stub_at(base, i), want, addr + (o - off), n);
		}
		if (memcmp(want, got, n))
			return 0;
	}
	return 1;
}

int zv_sharedtext_map(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags,
		      struct zv_stub_batch *b)
{
	struct zv_cache_key k;
	if (!eligible(fd, off, len, prot, flags, b, &k) || __atomic_load_n(&norigs, __ATOMIC_ACQUIRE) == MAX_ORIGS)
		return 0;
	char path[300];
	zv_sitecache_path(&k, "pgs", path, sizeof path);
	long cfd = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (cfd < 0)
		return 0;
	struct stat st;
	/* the trailer, read where the windows go (the batch's largest part) */
	uint8_t *buf = (uint8_t *)b->w;
	const char *why = "cannot read";
	struct trailer head;
	if (zv_sys2(__NR_fstat, cfd, &st) == 0) {
		if ((long)st.st_uid != zv_sitecache_euid() || (st.st_mode & 022) || (st.st_mode & 0170000) != 0100000) {
			zv_close((int)cfd); /* not damage: another user's, or one others may write; not used */
			return 0;
		}
		why = NULL;
		/* the trailer, not the stubs after it (the region's check reads
		 * those where they are mapped): a first part, then the rest */
		uint64_t room = (uint64_t)b->max * sizeof *b->w;
		long got = zv_sys4(__NR_pread64, cfd, buf, FIRST_READ, off + len);
		if (got >= (long)sizeof head) {
			memcpy(&head, buf, sizeof head);
			if (memcmp(&head.key, &k, sizeof k)) {
				zv_close((int)cfd); /* another range with the same hash: not damage */
				return 0;
			}
			uint64_t tlen = HEAD + head.nw * sizeof *b->w + head.ninside * 8;
			if (got == FIRST_READ && tlen > FIRST_READ && tlen <= room) {
				long more = zv_sys4(__NR_pread64, cfd, buf + got, tlen - FIRST_READ, off + len + FIRST_READ);
				got = more < 0 ? more : got + more;
			}
		}
		if (!why)
			why = unpack(&k, buf, got, (uint64_t)st.st_size, addr, b);
	}
	if (!why && (head.verdict == ~0UL || head.verdict > (1UL << 40))) {
		/* stored without sudoff's count (by a process armed for good before it
		 * mapped this, before the count was always taken): every process
		 * would scan the whole mapping again; this one writes the windows
		 * privately and stores a copy with the count in its place */
		zv_close((int)cfd);
		zv_sys1(__NR_unlink, path);
		b->n = b->ninside = 0;
		return 0;
	}
	int r = 0;
	/* The name this process reaches the original by (a hard link, a bind
	 * mount or a chroot name it otherwise than the trailer, which had the
	 * storing process's): its maps line shows that one. */
	char named[MAX_PATH + 8];
	if (!why && original_path(fd, named) < 0) {
		zv_close((int)cfd);
		b->n = b->ninside = 0;
		return 0;
	}
	/* Written since it was made, or a copy of one made elsewhere (its mark,
	 * the mtime set from its own inode, is gone): used only if its code
	 * is the original's with these windows, and marked again. */
	int marked = !why && zv_sitecache_marked(&st, &k);
	if (!why && !marked) {
		if (same_as_original(cfd, fd, off, len, addr, addr + (uint64_t)head.region, b))
			zv_sitecache_mark(cfd, &k);
		else
			why = "code differs from the file";
	}
	if (!why) {
		b->verdict = head.verdict == ~0UL || head.verdict > (1UL << 40) ? -1 : (long)head.verdict;
		struct mapping m = { addr, len, off, prot, (int)cfd, 0 };
		uint64_t tlen = page_up(HEAD + head.nw * sizeof *b->w + head.ninside * 8);
		struct zv_stub_file f = { (int)cfd, off + len + tlen, marked };
		uint64_t at = addr + (uint64_t)head.region;
		/* a region where this process would not put one is a place taken */
		int made = zv_stubs_place_ok(addr, addr + len, at, zv_stubs_region_size(b->n))
				   ? zv_stubs_commit_at(b, addr, addr + len, at, &f, map_copy, &m)
				   : 0;
		if (made < 0) {
			/* not the stubs these windows make: the copy is dropped and
			 * the windows written privately as on a miss */
			why = "stubs do not match";
			b->n = b->ninside = 0;
		} else if (made == b->n) {
			remember(st.st_dev, st.st_ino, &head, path, named);
			r = ZV_SHARED_MAPPED;
		} else {
			/* the region's place is taken: the windows are written into
			 * a private copy as without a shared one */
			if ((m.failed || b->unmapped) &&
			    !zv_is_err((long)zv_mmap((void *)addr, len, prot, MAP_PRIVATE | MAP_FIXED, fd, (long)off)))
				b->unmapped = 0;
			r = ZV_SHARED_WINDOWS;
		}
	}
	if (why)
		b->n = b->ninside = 0;
	zv_fdlist_close(zv_load_fds, (int)cfd, (int)cfd); /* a load's: with its other files */
	if (why)
		zv_sitecache_drop(path, why);
	return r;
}

void zv_sharedtext_forget(int fd, uint64_t off, uint64_t len)
{
	struct zv_cache_key k;
	char path[300];
	if (zv_sitecache_dir()[0] && zv_sitecache_key(fd, NULL, MAGIC_COPY, off, len, &k)) {
		zv_sitecache_path(&k, "pgs", path, sizeof path);
		zv_sitecache_drop(path, "windows do not match the file");
	}
}

void zv_sharedtext_store(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags,
			 struct zv_stub_batch *b)
{
	struct zv_cache_key k;
	uint64_t ws = sizeof(struct zv_stub_window);
	uint64_t tlen = HEAD + (uint64_t)b->n * ws + (uint64_t)b->ninside * 8, slen = zv_stubs_region_size(b->n);
	/* a hit reads the trailer into the windows' buffer */
	if (!b->region || !b->n || b->verdict < 0 || tlen > (uint64_t)b->max * ws ||
	    !eligible(fd, off, len, prot, flags, b, &k))
		return;
	/* the trailer's first page is built in the batch's bitmaps (scratch now) */
	struct trailer *t = (struct trailer *)b->starts;
	memset(t, 0, HEAD);
	if (original_path(fd, t->path) < 0)
		return;
	t->key = k;
	t->region = (int64_t)(b->region - addr);
	t->nw = (uint64_t)b->n;
	t->ninside = (uint64_t)b->ninside;
	t->verdict = b->verdict < 0 ? ~0UL : (uint64_t)b->verdict;
	t->pathlen = zv_strlen(t->path);
	for (int i = 0; i < b->n; i++) { /* as file offsets: b is not used after this */
		struct zv_stub_window *w = &b->w[i];
		w->p = w->p - addr + off;
		w->s = w->s - addr + off;
		w->d = w->d ? w->d - addr + off : 0;
	}
	for (int i = 0; i < b->ninside; i++)
		b->inside[i] = b->inside[i] - addr + off;
	uint64_t h = mix(0x9e3779b97f4a7c15ULL, t, HEAD);
	h = mix(h, b->w, t->nw * ws);
	t->sum = mix(h, b->inside, t->ninside * 8);

	char path[300], tmp[320];
	zv_sitecache_path(&k, "pgs", path, sizeof path);
	zv_snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, zv_getpid());
	long cfd = zv_sitecache_create(tmp);
	if (cfd < 0)
		return;
	uint64_t at = off + len;
	int ok = zv_sys4(__NR_pwrite64, cfd, addr, len, off) == (long)len &&
		 zv_sys4(__NR_pwrite64, cfd, t, HEAD, at) == (long)HEAD &&
		 zv_sys4(__NR_pwrite64, cfd, b->w, t->nw * ws, at + HEAD) == (long)(t->nw * ws) &&
		 zv_sys4(__NR_pwrite64, cfd, b->inside, t->ninside * 8, at + HEAD + t->nw * ws) == (long)(t->ninside * 8) &&
		 zv_sys4(__NR_pwrite64, cfd, b->region, slen, at + page_up(tlen)) == (long)slen;
	/* written back now, not waited for: the pages processes map are then
	 * clean, as the original's (smaps' and numa_maps' dirty counts) */
	if (ok) {
		zv_sys4(__NR_sync_file_range, cfd, 0, 0, 2 /* SYNC_FILE_RANGE_WRITE */);
		zv_sitecache_mark(cfd, &k); /* last: no write may follow */
	}
	zv_close((int)cfd);
	/* room within the bound, by evicting the least recently used files */
	ok = ok && zv_cachecap_fit(zv_sitecache_dir(), len + page_up(tlen) + slen, zv_sitecache_cap(), b->targets, 2 * b->bitmap_bytes);
	if (!ok || zv_sys4(__NR_renameat, AT_FDCWD, tmp, AT_FDCWD, path) != 0)
		zv_sys3(__NR_unlinkat, AT_FDCWD, tmp, 0); /* a full disk: no copy */
}
