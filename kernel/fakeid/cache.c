/* What the last read of a file's attribute found, kept by device, inode
 * and change time: a file stat'ed again (make, compilers, dpkg, an
 * interpreter's imports) costs no second host call while its ctime stands
 * still, and every change of an attribute moves the ctime. (Two changes
 * within one tick of a coarse clock could keep it; Linux 6.13's multigrain
 * timestamps give a change after a stat a ctime of its own.) A record this
 * process writes drops its entry. Entries are claimed by a sequence word,
 * so threads may race on one: a reader that sees it move misses. */
#include "fakeid/fakeid.h"
#include "zvisor.h"

#define NENTRIES 512

struct entry {
	volatile uint32_t seq; /* odd while written */
	uint32_t found;
	uint64_t dev, ino, ctime_ns;
	struct zv_fid_rec rec;
};

static ZV_COLD_BSS struct entry table[NENTRIES];

static struct entry *slot(uint64_t dev, uint64_t ino)
{
	uint64_t h = dev * 0x9e3779b97f4a7c15UL ^ ino * 0xc2b2ae3d27d4eb4fUL;
	return &table[(h ^ (h >> 31)) % NENTRIES];
}

/* 1 and the record, 0 (no record), or -1 (not known). */
int zv_fid_cache_get(const struct zv_fid_stat *s, struct zv_fid_rec *r)
{
	if (s->ctime_ns == ~0UL)
		return -1; /* a statx without it */
	struct entry *e = slot(s->dev, s->ino);
	uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if ((seq & 1) || e->dev != s->dev || e->ino != s->ino || e->ctime_ns != s->ctime_ns)
		return -1;
	struct zv_fid_rec rec = e->rec;
	int found = (int)e->found;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq)
		return -1;
	if (found)
		*r = rec;
	return found;
}

static struct entry *claim(const struct zv_fid_stat *s, uint32_t *seq)
{
	struct entry *e = slot(s->dev, s->ino);
	*seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	if ((*seq & 1) || !__atomic_compare_exchange_n(&e->seq, seq, *seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return NULL; /* another thread writes it */
	return e;
}

/* What a read found: r, or NULL for no record. */
void zv_fid_cache_put(const struct zv_fid_stat *s, const struct zv_fid_rec *r)
{
	uint32_t seq;
	struct entry *e = s->ctime_ns == ~0UL ? NULL : claim(s, &seq);
	if (!e)
		return;
	e->dev = s->dev;
	e->ino = s->ino;
	e->ctime_ns = s->ctime_ns;
	e->found = r != NULL;
	if (r)
		e->rec = *r;
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

/* The file's record changes. */
void zv_fid_cache_drop(const struct zv_fid_stat *s)
{
	uint32_t seq;
	struct entry *e = claim(s, &seq);
	if (!e)
		return;
	if (e->dev == s->dev && e->ino == s->ino)
		e->ino = e->dev = 0;
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}
