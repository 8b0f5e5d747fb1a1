/* The database of records a file cannot hold itself (symlinks and other
 * files without user xattrs, filesystems without them, files the host
 * user may not write, --fake-db-only), keyed by device and inode, shared
 * by every process that maps it.
 *
 * The file: a header page, then hash tables of 40-byte records (open
 * addressing, linear probing). The header's table word (generation,
 * offset, size) names the current table. Readers take no lock: a slot's
 * fields are written before its state turns USED, never rewritten while
 * the table is current (a change adds a new slot and turns the old one
 * DEAD; slots are reused only by a rebuild), and a rebuild writes a new
 * table elsewhere in the file before the table word moves to it; a lookup
 * that saw the word move under it looks again. Writers hold a POSIX lock
 * on the file (one process at a time) and a mutex (one thread). The file
 * only grows; a rebuild reuses the space of the table before last. */
#include "fakeid/fakeid.h"
#include "sys/proc.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include "lib/mutex.h"
#include "sys/calls.h"
#include <linux/fcntl.h>
#include <linux/mman.h>

#define MAGIC "ZVOWNDB1"
#define MAP_BYTES (64UL << 20) /* reserved at once: the file grows inside it */
#define PAGE 4096UL
#define MIN_LG 6

enum { EMPTY, USED, DEAD };

struct header {
	char magic[8];
	uint32_t version, rec_size;
	uint64_t table;      /* generation << 48 | offset / PAGE << 8 | log2 of the slots */
	uint32_t taken;      /* slots USED or DEAD in the current table */
	uint32_t live;       /* slots USED */
};

struct slot {
	uint64_t dev, ino;
	uint32_t uid, gid, mode, major, minor;
	uint32_t state;
};
_Static_assert(sizeof(struct slot) == 40, "the file's record is 40 bytes");

#define T_OFF(t) ((((t) >> 8) & 0xffffffffffUL) * PAGE)
#define T_LG(t) ((unsigned)((t) & 0xff))
#define T_GEN(t) ((t) >> 48)
#define T_WORD(gen, off, lg) (((uint64_t)(gen) << 48) | ((off) / PAGE) << 8 | (lg))

static uint64_t table_end(uint64_t t)
{
	return T_OFF(t) + (sizeof(struct slot) << T_LG(t));
}

static struct header *hdr(void)
{
	if (!zv_fid.db_map && zv_fid.db_fd >= 0) {
		void *m = zv_kmap(MAP_BYTES, PAGE, zv_fid.db_fd);
		if (!zv_is_err((long)m))
			zv_fid.db_map = m;
	}
	return zv_fid.db_map;
}

static uint64_t hash(uint64_t dev, uint64_t ino)
{
	uint64_t h = dev * 0x9e3779b97f4a7c15UL ^ ino * 0xc2b2ae3d27d4eb4fUL;
	return h ^ (h >> 29);
}

static struct slot *slots(struct header *h, uint64_t t)
{
	return (struct slot *)((char *)h + T_OFF(t));
}

/* The slot of (dev, ino) in table t, or NULL. */
static struct slot *find(struct header *h, uint64_t t, uint64_t dev, uint64_t ino)
{
	uint64_t mask = (1UL << T_LG(t)) - 1;
	struct slot *s = slots(h, t);
	for (uint64_t i = hash(dev, ino), n = 0; n <= mask; i++, n++) {
		struct slot *x = &s[i & mask];
		uint32_t st = __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
		if (st == EMPTY)
			return NULL;
		if (st == USED && x->dev == dev && x->ino == ino)
			return x;
	}
	return NULL;
}

int zv_fid_db_empty(void)
{
	struct header *h = hdr();
	return !h || !__atomic_load_n(&h->live, __ATOMIC_ACQUIRE);
}

int zv_fid_db_get(uint64_t dev, uint64_t ino, struct zv_fid_rec *r)
{
	struct header *h = hdr();
	if (!h)
		return 0;
	for (;;) {
		if (!__atomic_load_n(&h->live, __ATOMIC_ACQUIRE))
			return 0;
		uint64_t t = __atomic_load_n(&h->table, __ATOMIC_ACQUIRE);
		if (table_end(t) > MAP_BYTES)
			return 0;
		struct slot *x = find(h, t, dev, ino);
		struct zv_fid_rec got = { 0 };
		if (x)
			got = (struct zv_fid_rec){ x->uid, x->gid, x->mode, x->major, x->minor };
		if (__atomic_load_n(&h->table, __ATOMIC_ACQUIRE) != t)
			continue; /* rebuilt meanwhile: the slot may be another table's */
		if (x)
			*r = got;
		return x != NULL;
	}
}

/* The writers' lock: the mutex among this process's threads, a POSIX
 * write lock among processes (never an OFD lock: a fork child shares its
 * parent's open file). */
static long lock(int on)
{
	struct flock fl = { .l_type = on ? F_WRLCK : F_UNLCK, .l_whence = 0, .l_start = 0, .l_len = 0 };
	if (on)
		zv_mutex_lock(&zv_fid.db_lock);
	long r;
	do
		r = zv_sys3(__NR_fcntl, zv_fid.db_fd, on ? F_SETLKW : F_SETLK, &fl);
	while (r == -EINTR);
	if (!on || r < 0)
		zv_mutex_unlock(&zv_fid.db_lock);
	return r;
}

static long grow_file(uint64_t end)
{
	struct { uint64_t x[18]; } st; /* struct stat: its size at 48 */
	long r = zv_sys2(__NR_fstat, zv_fid.db_fd, &st);
	if (r < 0)
		return r;
	end = (end + PAGE - 1) & ~(PAGE - 1);
	if (end > MAP_BYTES)
		return -ENOSPC;
	return st.x[6] >= end ? 0 : zv_sys2(__NR_ftruncate, zv_fid.db_fd, end);
}

/* A new table for at least want live slots, filled from the current one;
 * placed at the first page unless the current table is there. */
static long rebuild(struct header *h, uint32_t want)
{
	uint64_t t = h->table;
	unsigned lg = MIN_LG;
	while ((1UL << lg) < (uint64_t)want * 4)
		lg++;
	uint64_t size = sizeof(struct slot) << lg, off = PAGE;
	if (T_OFF(t) < off + size)
		off = (table_end(t) + PAGE - 1) & ~(PAGE - 1);
	long r = grow_file(off + size);
	if (r < 0)
		return r;
	uint64_t nt = T_WORD(T_GEN(t) + 1, off, lg), mask = (1UL << lg) - 1;
	struct slot *dst = slots(h, nt), *src = slots(h, t);
	memset(dst, 0, size);
	uint32_t live = 0;
	for (uint64_t i = 0; i < (1UL << T_LG(t)); i++) {
		if (src[i].state != USED)
			continue;
		uint64_t j = hash(src[i].dev, src[i].ino);
		while (dst[j & mask].state != EMPTY)
			j++;
		dst[j & mask] = src[i];
		live++;
	}
	h->taken = live;
	__atomic_store_n(&h->table, nt, __ATOMIC_RELEASE);
	return 0;
}

long zv_fid_db_put(uint64_t dev, uint64_t ino, const struct zv_fid_rec *r)
{
	struct header *h = hdr();
	if (!h)
		return r ? -EOPNOTSUPP : 0;
	if (!r && zv_fid_db_empty())
		return 0;
	long e = lock(1);
	if (e < 0)
		return e;
	uint64_t t = h->table;
	struct slot *old = find(h, t, dev, ino);
	if (r && old && old->uid == r->uid && old->gid == r->gid && old->mode == r->mode && old->major == r->major &&
	    old->minor == r->minor)
		goto out; /* as it is */
	if (r && (uint64_t)(h->taken + 1) * 4 > (3UL << T_LG(t))) {
		if ((e = rebuild(h, h->live + 1)) < 0)
			goto out;
		t = h->table;
		old = find(h, t, dev, ino);
	}
	if (r) {
		uint64_t mask = (1UL << T_LG(t)) - 1, i = hash(dev, ino);
		struct slot *s = slots(h, t);
		while (s[i & mask].state != EMPTY)
			i++;
		struct slot *x = &s[i & mask];
		*x = (struct slot){ dev, ino, r->uid, r->gid, r->mode, r->major, r->minor, EMPTY };
		__atomic_store_n(&x->state, USED, __ATOMIC_RELEASE);
		h->taken++;
		__atomic_store_n(&h->live, h->live + 1, __ATOMIC_RELEASE);
	}
	if (old) {
		__atomic_store_n(&old->state, DEAD, __ATOMIC_RELEASE);
		__atomic_store_n(&h->live, h->live - 1, __ATOMIC_RELEASE);
	}
out:
	lock(0);
	return e < 0 ? e : 0;
}

static void db_close(void)
{
	if (zv_fid.db_map)
		zv_kunmap(zv_fid.db_map, MAP_BYTES);
	zv_fid.db_map = NULL;
	zv_forget_hidden_fd(&zv_fid.db_fd);
	zv_close(zv_fid.db_fd);
	zv_fid.db_fd = -1;
}

/* Opens the database at path (created if missing), or a new one in memory
 * for this run's processes (path NULL); made a hidden fd that crosses
 * execve. Returns 0 or -errno (EINVAL: not a database). */
int zv_fid_db_open(const char *path)
{
	long fd = path ? zv_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600)
		       : zv_sys2(__NR_memfd_create, "zvisor-owners", 0);
	if (fd < 0)
		return (int)fd;
	zv_fid.db_fd = zv_hide_fd((int)fd);
	zv_keep_hidden_fd(&zv_fid.db_fd);
	struct header *h = hdr();
	long e = h ? lock(1) : -ENOMEM;
	if (e < 0) {
		db_close();
		return (int)e;
	}
	struct { uint64_t x[18]; } st;
	e = zv_sys2(__NR_fstat, zv_fid.db_fd, &st);
	if (e >= 0 && st.x[6] == 0) { /* new: the header and an empty table */
		e = grow_file(PAGE + (sizeof(struct slot) << MIN_LG));
		if (e >= 0) {
			memcpy(h->magic, MAGIC, 8);
			h->version = 1;
			h->rec_size = sizeof(struct slot);
			h->table = T_WORD(0, PAGE, MIN_LG);
		}
	} else if (e >= 0 && (st.x[6] < PAGE || memcmp(h->magic, MAGIC, 8) || h->version != 1 ||
			      h->rec_size != sizeof(struct slot) || table_end(h->table) > st.x[6])) {
		e = -EINVAL;
	}
	lock(0);
	if (e < 0)
		db_close();
	return (int)(e < 0 ? e : 0);
}
