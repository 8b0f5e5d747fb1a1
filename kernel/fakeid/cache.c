/* What the last read of a file's attribute found, kept by device, inode
 * and change time: every change of an attribute moves the ctime, so a
 * file stat'ed again costs no host call while its ctime stands still.
 * Two tables of 2-way sets:
 *   - this process's (make, compilers, dpkg, an interpreter's imports);
 *   - a file in zvisor's cache directory (fakeid.cache; none under
 *     --no-cache), mapped by every image that stats a file, of every run:
 *     what `ls -lR` or `find` learnt serves the next program. The key is
 *     the host's (device, inode, ctime), true of the file whatever view
 *     shows it. The file takes only files whose ctime lies more than
 *     SETTLED before the image's first read of the clock: a change after
 *     the read then gets a later ctime, whatever the filesystem's clock
 *     granularity (under 2 s), with or without multigrain timestamps.
 *     Younger files go to the process's table only.
 * (In the process's table, two changes within one tick of a coarse clock
 * could keep a ctime; Linux 6.13's multigrain timestamps give a change
 * after a stat a ctime of its own.) A record this process writes drops its
 * entries. Entries are claimed by a sequence word, so threads and
 * processes may race on one: a reader that sees it move misses, and an
 * entry a killed writer left odd is never read. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include "lib/fmt.h"
#include "intercept/sitecache.h"
#include "sys/calls.h"
#include "sys/execstate.h"
#include <linux/fcntl.h>
#include <asm/stat.h>

#define LOCAL_SETS 256
#define FILE_SETS 32768
#define FILE_HEAD 4096UL
#define FILE_BYTES (FILE_HEAD + FILE_SETS * 2 * sizeof(struct entry))
#define FILE_MAGIC "ZVSEEN01"
#define SETTLED 2000000000UL /* ns */

struct entry {
	volatile uint32_t seq; /* odd while written */
	uint32_t found;
	uint64_t dev, ino, ctime_ns;
	struct zv_fid_rec rec;
	uint32_t pad[3];
};
_Static_assert(sizeof(struct entry) == 64, "the cache file's entry is 64 bytes");

struct file_head {
	char magic[8];
	uint32_t entry_size, sets;
};

static ZV_COLD_BSS struct entry local[LOCAL_SETS * 2];

/* The entries of (dev, ino)'s set in a table of nsets sets: by the inode
 * number itself, so that the files of a directory (made together, numbered
 * together) share pages and cache lines. */
static struct entry *set_of(struct entry *t, unsigned nsets, uint64_t dev, uint64_t ino)
{
	uint64_t h = dev * 0x9e3779b97f4a7c15UL;
	return &t[((ino + (h ^ (h >> 29))) % nsets) * 2];
}

static void *file_map;
static int file_tried;
static int file_fd = -1; /* hidden, carried across a host exec (field A) */

/* The file behind fd mapped, if it is one of this format; NULL if not. */
static void *map_fd(int fd)
{
	void *m = zv_kmap(FILE_BYTES, 4096, fd);
	if (zv_is_err((long)m))
		return NULL;
	const struct file_head *h = m;
	if (memcmp(h->magic, FILE_MAGIC, 8) || h->entry_size != sizeof(struct entry) || h->sets != FILE_SETS) {
		zv_kunmap(m, FILE_BYTES);
		return NULL;
	}
	return m;
}

/* The file at path, made if missing at its full size (sparse), mapped and
 * its fd kept; NULL if it cannot be or is of another format. */
static void *map_file(const char *path)
{
	long fd = zv_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = NULL;
	long r = zv_sys2(__NR_fstat, (int)fd, &st);
	if (r == 0 && !st.st_size) {
		/* new (two runs making it at once write the same) */
		struct file_head h = { FILE_MAGIC, sizeof(struct entry), FILE_SETS };
		r = zv_sys2(__NR_ftruncate, (int)fd, FILE_BYTES);
		if (r == 0 && zv_sys4(__NR_pwrite64, (int)fd, &h, sizeof h, 0) != (long)sizeof h)
			r = -EIO;
		st.st_size = FILE_BYTES;
	}
	if (r == 0 && st.st_size == FILE_BYTES && (m = map_fd((int)fd))) {
		/* kept (without O_CLOEXEC: zv_hide_fd dup2s) for the images a
		 * host exec makes, which map it without opening it */
		file_fd = zv_hide_fd((int)fd);
		if (file_fd != fd && zv_keep_hidden_fd(&file_fd) == 0)
			return m;
		fd = file_fd;
		file_fd = -1;
	}
	zv_close((int)fd);
	return m;
}

/* The file's entries, mapped at the first use in this image (a fork child
 * shares its parent's mapping, an exec in the process keeps it); NULL:
 * none. */
static struct entry *file_table(void)
{
	if (!__atomic_load_n(&file_tried, __ATOMIC_ACQUIRE)) {
		static volatile int lock;
		zv_lock(&lock);
		if (!file_tried) {
			char path[300];
			if (file_fd >= 0) {
				if (!(file_map = map_fd(file_fd))) {
					zv_forget_hidden_fd(&file_fd);
					zv_close(file_fd);
					file_fd = -1;
				}
			} else if (zv_sitecache_make_dir() &&
				   zv_snprintf(path, sizeof path, "%s/fakeid.cache", zv_sitecache_dir()) < (int)sizeof path) {
				file_map = map_file(path);
			}
			__atomic_store_n(&file_tried, 1, __ATOMIC_RELEASE);
		}
		zv_unlock(&lock);
	}
	return file_map ? (struct entry *)((char *)file_map + FILE_HEAD) : NULL;
}

/* Exec state field A: the file's hidden fd. */
static int encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	(void)x;
	return file_fd < 0 ? -1 : zv_snprintf(buf, n, "%x", file_fd);
}

static const char *decode(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	file_fd = (int)zv_parse_hex(s, &s);
	if (file_fd >= 0)
		zv_keep_hidden_fd(&file_fd);
	return s;
}

ZV_EXEC_FIELD(fakeid_cache, 325, 'A', encode, decode);

/* 1 and the record, 0 (no record), or -1 (not known), from one table. */
static int get(struct entry *t, unsigned nsets, const struct zv_fid_stat *s, struct zv_fid_rec *r)
{
	struct entry *set = set_of(t, nsets, s->dev, s->ino);
	for (int w = 0; w < 2; w++) {
		struct entry *e = &set[w];
		uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if ((seq & 1) || e->dev != s->dev || e->ino != s->ino || e->ctime_ns != s->ctime_ns)
			continue;
		struct zv_fid_rec rec = e->rec;
		int found = (int)e->found;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq)
			return -1;
		if (found)
			*r = rec;
		return found;
	}
	return -1;
}

int zv_fid_cache_get(const struct zv_fid_stat *s, struct zv_fid_rec *r)
{
	if (s->ctime_ns == ~0UL)
		return -1; /* a statx without it */
	struct entry *f = file_table();
	int known = f ? get(f, FILE_SETS, s, r) : -1;
	return known >= 0 ? known : get(local, LOCAL_SETS, s, r);
}

/* The entry of (dev, ino) in its set, or a free one, or the other
 * (by the ctime's low bit), claimed: NULL if another writer holds it. */
static struct entry *claim(struct entry *t, unsigned nsets, const struct zv_fid_stat *s, uint32_t *seq)
{
	struct entry *set = set_of(t, nsets, s->dev, s->ino), *e = &set[(s->ctime_ns >> 3) & 1];
	for (int w = 0; w < 2; w++)
		if ((set[w].dev == s->dev && set[w].ino == s->ino) || (!set[w].dev && !set[w].ino)) {
			e = &set[w];
			break;
		}
	*seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	if ((*seq & 1) || !__atomic_compare_exchange_n(&e->seq, seq, *seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return NULL;
	return e;
}

static void put(struct entry *t, unsigned nsets, const struct zv_fid_stat *s, const struct zv_fid_rec *r)
{
	uint32_t seq;
	struct entry *e = claim(t, nsets, s, &seq);
	if (!e)
		return;
	e->dev = s->dev;
	e->ino = s->ino;
	e->ctime_ns = s->ctime_ns;
	e->found = r != NULL;
	e->rec = r ? *r : (struct zv_fid_rec){ 0 };
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

/* The host's time at this image's first put, in ns (0: not read). */
static uint64_t image_start;

/* What a read found: r, or NULL for no record. */
void zv_fid_cache_put(const struct zv_fid_stat *s, const struct zv_fid_rec *r)
{
	if (s->ctime_ns == ~0UL)
		return;
	struct entry *f = file_table();
	if (f && !image_start) {
		struct { int64_t sec, nsec; } ts;
		if (zv_sys2(__NR_clock_gettime, 0 /* CLOCK_REALTIME: the clock of ctimes */, &ts) == 0)
			image_start = (uint64_t)ts.sec * 1000000000UL + (uint64_t)ts.nsec;
	}
	if (f && s->ctime_ns + SETTLED < image_start)
		put(f, FILE_SETS, s, r);
	else
		put(local, LOCAL_SETS, s, r);
}

static void drop(struct entry *t, unsigned nsets, const struct zv_fid_stat *s)
{
	struct entry *set = set_of(t, nsets, s->dev, s->ino);
	for (int w = 0; w < 2; w++) {
		struct entry *e = &set[w];
		uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
		if (e->dev != s->dev || e->ino != s->ino || (seq & 1) ||
		    !__atomic_compare_exchange_n(&e->seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		if (e->dev == s->dev && e->ino == s->ino)
			e->ino = e->dev = 0;
		__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
	}
}

/* The file's record changes. */
void zv_fid_cache_drop(const struct zv_fid_stat *s)
{
	struct entry *f = file_table();
	if (f)
		drop(f, FILE_SETS, s);
	drop(local, LOCAL_SETS, s);
}
