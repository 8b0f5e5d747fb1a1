/* The directory cache (dcache.h). 2-way sets of entries keyed by (parent,
 * parent's generation, name). A directory entry holds a hidden O_PATH fd
 * (sys/fs.c's registry keeps the guest off its number); at most MAX_FDS of
 * them, the least used giving way (one never found again first).
 *
 * What may make an entry wrong is a rename or removal of a directory or
 * symlink on its path, by this process or another: every process of the
 * view that makes one bumps the shared epoch (shared.c), and a walk that
 * finds the epoch moved starts from an empty cache. A rename of a file
 * (dpkg's, one per file) bumps it only when the name was that of a cached
 * symlink (a filter of their names in the shared page) or the file turned
 * out to be a directory or symlink. Changes made outside the view's
 * processes are not seen (docs/FSVIEW.md). */
#include "fsview/fsview.h"
#include "fsview/dcache.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/fcntl.h>
#include <linux/uio.h>

#define SETS 256
#define WAYS 2
#define NAME_MAX_ 47
#define TARGET_MAX FSV_DC_TARGET_MAX
#define MAX_FDS 64
#define GRAVE (2 * MAX_FDS)

struct ent {
	int16_t parent;  /* a slot, or FSV_DC_ROOT; 0 with key 0: free */
	uint32_t pgen;
	uint32_t gen;    /* bumped when the entry goes: its children go with it */
	uint64_t key;
	uint32_t used;
	int fd;          /* a directory's, or -1 for a symlink */
	uint8_t nlen, tlen;
	uint8_t hits;    /* found again since made (saturating) */
	char name[NAME_MAX_ + 1];
};

/* Which entry gives way: one never found again before any that was (the
 * directories of a scan or of a shell's glob go before the ones every
 * program's start walks), then the least recently used. */
static uint64_t keep_rank(const struct ent *e)
{
	return (uint64_t)(e->hits > 0) << 32 | e->used;
}

static struct ent ents[SETS * WAYS] ZV_COLD_BSS;
/* a symlink entry's target, apart: the entries a new image loads touch
 * fewer pages (each a fault) */
static char targets[SETS * WAYS][TARGET_MAX + 1] ZV_COLD_BSS;
static uint32_t root_gen = 1, clock;
static uint64_t epoch;
static int nfds, live; /* directory fds; entries */
static int16_t fdents[MAX_FDS]; /* the entries that hold those fds */

static void fd_held(struct ent *e)
{
	fdents[nfds++] = (int16_t)(e - ents);
}

static volatile int lock, walkers;
static int grave[GRAVE], ngrave;

/* What a stat just said of a name: no symlink. One hint per thread (by tid,
 * a few), for the calls that follow the same name at once (ls: statx, then
 * getxattr), until the epoch moves or the thread changes a name. */
#define HINTS 16
static struct {
	int tid;
	struct fsv_dref d;
	uint64_t key, epoch;
} hints[HINTS];

static uint64_t key_of(int parent, uint32_t pgen, const char *c, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uint32_t)parent ^ ((uint64_t)pgen << 32);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)c[i]) * 0x100000001b3ULL;
	return h | 1; /* never 0: a free entry's */
}

/* Whether this thread may change the cache, and read it. */
static int usable(void) { return fsv.vroot_len == 1 && !fsv_vm_child(); }
static int readable(void) { return fsv.vroot_len == 1 && (!fsv_vm_child() || fsv_vfork_child()); }

/* Under lock: the entry goes; its fd when no walk may hold it (this
 * thread's own included: fsv_dc_end closes it). */
static void drop(struct ent *e)
{
	if (e->fd >= 0) {
		zv_forget_hidden_fd(&e->fd);
		if (ngrave == GRAVE) {
			zv_close(e->fd); /* not seen: the walks ahead are fewer than the fds */
		} else {
			zv_sys3(__NR_fcntl, e->fd, F_SETFD, FD_CLOEXEC); /* no exec takes it along */
			grave[ngrave++] = e->fd;
		}
		for (int i = 0; i < nfds; i++)
			if (fdents[i] == e - ents) {
				fdents[i] = fdents[--nfds];
				break;
			}
	}
	if (e->key)
		live--;
	e->fd = -1;
	e->key = 0;
	e->gen++;
}

static void flush_locked(void)
{
	for (int i = 0; i < SETS * WAYS && live; i++) /* (no walk over pages never touched) */
		if (ents[i].key)
			drop(&ents[i]);
	root_gen++;
}

void fsv_dc_flush(void)
{
	zv_lock(&lock);
	flush_locked();
	zv_unlock(&lock);
}

int fsv_dc_begin(void)
{
	__atomic_fetch_add(&walkers, 1, __ATOMIC_ACQUIRE);
	uint64_t e = fsv_epoch();
	if (e != epoch) {
		if (!usable())
			return 0; /* a vfork child: stale, and not its to empty */
		zv_lock(&lock);
		if (e != epoch) {
			flush_locked();
			epoch = e;
		}
		zv_unlock(&lock);
	}
	return readable();
}

void fsv_dc_end(void)
{
	if (__atomic_sub_fetch(&walkers, 1, __ATOMIC_RELEASE) || !ngrave)
		return;
	zv_lock(&lock);
	if (!walkers)
		while (ngrave)
			zv_close(grave[--ngrave]);
	zv_unlock(&lock);
}

/* Whether slot may have entries under it: the root or an entry (not
 * FSV_DC_NONE, nor FSV_DC_GUEST, the guest's directory). */
static int holds(int slot) { return slot >= 0 || slot == FSV_DC_ROOT; }

static uint32_t gen_of(int slot)
{
	if (slot == FSV_DC_GUEST)
		return fsv_memo_guest_gen(root_gen);
	return slot == FSV_DC_ROOT ? root_gen : ents[slot].gen;
}

struct fsv_dref fsv_dc_root(void) { return (struct fsv_dref){ FSV_DC_ROOT, root_gen }; }

static struct ent *find_locked(struct fsv_dref d, const char *c, size_t n)
{
	if (!holds(d.slot) || n > NAME_MAX_ || gen_of(d.slot) != d.gen)
		return NULL;
	uint64_t k = key_of(d.slot, d.gen, c, n);
	struct ent *set = &ents[(k >> 8) % SETS * WAYS];
	for (int w = 0; w < WAYS; w++) {
		struct ent *e = &set[w];
		if (e->key == k && e->parent == d.slot && e->pgen == d.gen && e->nlen == n && !memcmp(e->name, c, n))
			return e;
	}
	return NULL;
}

int fsv_dc_find(struct fsv_dref d, const char *c, size_t n, struct fsv_dref *child, int *fd, char *t, size_t *tn)
{
	zv_lock(&lock);
	struct ent *e = find_locked(d, c, n);
	if (e) {
		e->used = ++clock;
		if (e->hits < 255)
			e->hits++;
		child->slot = (int)(e - ents);
		child->gen = e->gen;
		*fd = e->fd;
		*tn = e->tlen;
		if (e->tlen)
			memcpy(t, targets[e - ents], (size_t)e->tlen + 1);
	}
	zv_unlock(&lock);
	return e != NULL;
}

struct fsv_dref fsv_dc_parent(struct fsv_dref d, int *fd)
{
	struct fsv_dref p = { FSV_DC_NONE, 0 };
	zv_lock(&lock);
	if (d.slot >= 0 && ents[d.slot].gen == d.gen && gen_of(ents[d.slot].parent) == ents[d.slot].pgen) {
		p.slot = ents[d.slot].parent;
		p.gen = ents[d.slot].pgen;
		*fd = p.slot == FSV_DC_ROOT ? fsv.rootfd : ents[p.slot].fd;
	}
	zv_unlock(&lock);
	return p;
}

/* Under lock: a slot for a new entry under d (the one of its set keep_rank
 * ranks lowest). */
static struct ent *slot_for(struct fsv_dref d, const char *c, size_t n, uint64_t *k)
{
	*k = key_of(d.slot, d.gen, c, n);
	struct ent *set = &ents[(*k >> 8) % SETS * WAYS], *e = &set[0];
	for (int w = 0; w < WAYS; w++) {
		if (!set[w].key) {
			e = &set[w];
			break;
		}
		if (keep_rank(&set[w]) < keep_rank(e))
			e = &set[w];
	}
	if (e->key)
		drop(e);
	return e;
}

static void fill(struct ent *e, struct fsv_dref d, uint64_t k, const char *c, size_t n)
{
	live++;
	e->key = k;
	e->parent = (int16_t)d.slot;
	e->pgen = d.gen;
	e->used = ++clock;
	e->hits = 0;
	e->nlen = (uint8_t)n;
	memcpy(e->name, c, n);
	e->name[n] = 0;
}

/* Under lock: a directory fd to give up for a new one (keep_rank's lowest). */
static void make_room(void)
{
	struct ent *old = NULL;
	for (int i = 0; i < nfds; i++)
		if (!old || keep_rank(&ents[fdents[i]]) < keep_rank(old))
			old = &ents[fdents[i]];
	if (old)
		drop(old);
}

int fsv_dc_add_dir(struct fsv_dref d, const char *c, size_t n, int *fdp, struct fsv_dref *child)
{
	if (!holds(d.slot) || n > NAME_MAX_ || !usable())
		return 0;
	/* out of the guest's way first (a host call: not under the lock); kept
	 * open across exec, which hands the cache on (fsv_dc_save) */
	*fdp = fsv_fd_high(*fdp, 0);
	if (!fsv_fd_is_high(*fdp))
		return 0; /* (RLIMIT_NOFILE below 256): kept, it would take a number of the guest's */
	zv_lock(&lock);
	if (gen_of(d.slot) != d.gen || find_locked(d, c, n) || *fdp < 0) {
		zv_unlock(&lock); /* gone, or another thread kept it: walk on without */
		return 0;
	}
	if (nfds >= MAX_FDS)
		make_room();
	uint64_t k;
	struct ent *e = slot_for(d, c, n, &k);
	fill(e, d, k, c, n);
	e->fd = *fdp;
	e->tlen = 0;
	if (zv_keep_hidden_fd(&e->fd) < 0) {
		e->key = 0;
		e->fd = -1;
		live--;
		zv_unlock(&lock);
		return 0;
	}
	fd_held(e);
	child->slot = (int)(e - ents);
	child->gen = e->gen;
	zv_unlock(&lock);
	return 1;
}

void fsv_dc_add_link(struct fsv_dref d, const char *c, size_t n, const char *t, size_t tn)
{
	if (!holds(d.slot) || n > NAME_MAX_ || !tn || tn > TARGET_MAX || !usable())
		return;
	fsv_link_name_seen(c, n);
	zv_lock(&lock);
	if (gen_of(d.slot) == d.gen && !find_locked(d, c, n)) {
		uint64_t k;
		struct ent *e = slot_for(d, c, n, &k);
		fill(e, d, k, c, n);
		e->fd = -1;
		e->tlen = (uint8_t)tn;
		memcpy(targets[e - ents], t, tn);
		targets[e - ents][tn] = 0;
	}
	zv_unlock(&lock);
}

void fsv_dc_gone(struct fsv_dref d, const char *c, size_t n, int kind)
{
	hints[(fsv_in_setup ? 0 : zv_current()->htid) % HINTS].tid = 0;
	if (kind == 'd' || kind == 'l' || fsv_link_name_known(c, n))
		fsv_epoch_bump(); /* every process of the view starts afresh */
	zv_lock(&lock);
	struct ent *e = find_locked(d, c, n);
	if (e)
		drop(e);
	zv_unlock(&lock);
}

void fsv_dc_mode_changed(struct fsv_dref d, const char *c, size_t n)
{
	/* it may lie on the path to the guest's directory, which no entry holds */
	fsv_memo_guest_drop();
	int dir = n == 1 && c[0] == '.' && d.slot != FSV_DC_NONE;
	zv_lock(&lock);
	if (!dir && holds(d.slot)) {
		struct ent *e = find_locked(d, c, n);
		dir = e && e->fd >= 0;
	} else if (!dir) {
		/* under a directory the cache does not know (or the guest's, which
		 * an entry may name too): any of that name */
		for (int i = 0; i < nfds && !dir; i++)
			dir = ents[fdents[i]].nlen == n && !memcmp(ents[fdents[i]].name, c, n);
	}
	zv_unlock(&lock);
	if (dir)
		fsv_epoch_bump(); /* walks through it must ask the host again */
}

int fsv_dc_valid(struct fsv_dref d, int *fd)
{
	int ok = 0;
	zv_lock(&lock);
	if (d.slot == FSV_DC_ROOT && d.gen == root_gen)
		*fd = fsv.rootfd, ok = 1;
	else if (d.slot >= 0 && ents[d.slot].key && ents[d.slot].gen == d.gen && ents[d.slot].fd >= 0)
		*fd = ents[d.slot].fd, ok = 1;
	zv_unlock(&lock);
	return ok;
}

void fsv_dc_hint(struct fsv_dref d, const char *c, size_t n)
{
	if (d.slot == FSV_DC_NONE)
		return;
	int tid = fsv_in_setup ? 0 : zv_current()->htid;
	int i = tid % HINTS;
	hints[i].tid = tid;
	hints[i].d = d;
	hints[i].key = key_of(d.slot, d.gen, c, n);
	hints[i].epoch = fsv_epoch();
}

int fsv_dc_hinted(struct fsv_dref d, const char *c, size_t n)
{
	if (d.slot == FSV_DC_NONE)
		return 0;
	int tid = fsv_in_setup ? 0 : zv_current()->htid, i = tid % HINTS;
	return hints[i].tid == tid && hints[i].d.slot == d.slot && hints[i].d.gen == d.gen &&
	       hints[i].key == key_of(d.slot, d.gen, c, n) && hints[i].epoch == fsv_epoch() && gen_of(d.slot) == d.gen;
}

void fsv_dc_fork_child(void)
{
	lock = 0;
	walkers = 0;
	while (ngrave)
		zv_close(grave[--ngrave]);
}

/* Across exec: the live entries in a memfd the new image reads (their
 * directory fds stay open: not close-on-exec). */
struct saved_head {
	uint32_t magic, count;
	uint32_t root_gen, clock;
	uint64_t epoch;
};

struct saved_ent {
	uint16_t slot;
	int16_t parent;
	uint32_t pgen, gen, used;
	int fd;
	uint8_t nlen, tlen, hits;
	char name[NAME_MAX_ + 1];
	char target[TARGET_MAX + 1];
};

#define SAVED_MAGIC 0x7a766463 /* "zvdc" */

int fsv_dc_save(void)
{
	if (!live || !readable() || fsv_epoch() != epoch)
		return -1;
	/* not close-on-exec: the new image reads it (a failed exec closes it) */
	long fd = zv_sys2(__NR_memfd_create, "zvisor-dcache", 0);
	if (fd >= 0 && fd < 3) { /* stdio the guest closed: not for the new image's zvisor to meet */
		long k = zv_sys3(__NR_fcntl, fd, F_DUPFD, 3);
		zv_close((int)fd);
		fd = k;
	}
	if (fd < 0)
		return -1;
	struct saved_head h = { SAVED_MAGIC, (uint32_t)live, root_gen, clock, epoch };
	struct saved_ent batch[24]; /* written 24 at a time, the head with the first */
	struct iovec iov[2] = { { &h, sizeof h }, { batch, 0 } };
	int nb = 0, first = 1;
	uint32_t n = 0;
	long off = 0;
	for (int i = 0; i <= SETS * WAYS; i++) {
		if (i < SETS * WAYS && ents[i].key && n < (uint32_t)live) {
			const struct ent *x = &ents[i];
			struct saved_ent *e = &batch[nb++];
			*e = (struct saved_ent){ .slot = (uint16_t)i, .parent = x->parent, .pgen = x->pgen, .gen = x->gen,
						 .used = x->used, .fd = x->fd, .nlen = x->nlen, .tlen = x->tlen,
						 .hits = x->hits };
			memcpy(e->name, x->name, sizeof e->name);
			if (x->tlen)
				memcpy(e->target, targets[i], sizeof e->target);
			n++;
		}
		if (nb == 24 || (i == SETS * WAYS && (nb || first))) {
			iov[1].iov_len = nb * sizeof batch[0];
			long bytes = (long)(iov[1].iov_len + (first ? sizeof h : 0));
			if (zv_sys5(__NR_pwritev, fd, (long)(iov + !first), 2 - !first, off, 0) != bytes) {
				zv_close((int)fd);
				return -1;
			}
			off += bytes;
			first = nb = 0;
		}
	}
	return (int)fd;
}

void fsv_dc_load(int fd)
{
	struct saved_head h;
	struct saved_ent batch[24];
	if (fd < 0)
		return;
	/* the head and the first batch in one read */
	struct iovec iov[2] = { { &h, sizeof h }, { batch, sizeof batch } };
	long got = zv_sys5(__NR_preadv, fd, (long)iov, 2, 0, 0) - (long)sizeof h;
	if (got >= 0 && h.magic == SAVED_MAGIC) {
		root_gen = h.root_gen;
		clock = h.clock;
		epoch = h.epoch;
		long off = sizeof h;
		for (uint32_t k = 0; k < h.count;) {
			if (off > (long)sizeof h)
				got = zv_sys4(__NR_pread64, fd, batch, sizeof batch, off);
			if (got < (long)sizeof batch[0])
				break;
			for (long j = 0; j < got / (long)sizeof batch[0] && k < h.count; j++, k++) {
				const struct saved_ent *e = &batch[j];
				if (e->slot >= SETS * WAYS || e->nlen > NAME_MAX_ || e->tlen > TARGET_MAX)
					continue;
				if (e->fd >= 0 && nfds == MAX_FDS) {
					zv_close(e->fd); /* (never: the saving cache had no more) */
					continue;
				}
				struct ent *x = &ents[e->slot];
				x->key = key_of(e->parent, e->pgen, e->name, e->nlen);
				x->parent = e->parent;
				x->pgen = e->pgen;
				x->gen = e->gen;
				x->used = e->used;
				x->hits = e->hits;
				x->fd = e->fd;
				x->nlen = e->nlen;
				x->tlen = e->tlen;
				memcpy(x->name, e->name, sizeof x->name);
				if (e->tlen)
					memcpy(targets[e->slot], e->target, sizeof targets[0]);
				live++;
				if (x->fd >= 0) {
					zv_keep_hidden_fd(&x->fd);
					fd_held(x);
				}
			}
			off += got;
		}
	}
	zv_close(fd);
}
