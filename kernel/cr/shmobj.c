/* The memory processes share, made once at restore (cr/treerestore.h's
 * struct zv_cr_shanon): MAP_SHARED anonymous objects, deleted files, and
 * SysV shared memory segments. Each is made at its own address in
 * zvisor's window; each process then maps the parts it had of it from
 * there (mremap of size 0: the same pages) and lets the whole go
 * (cr/treerestore.c). A process alone makes its SysV segments so too.
 *
 * A SysV segment is saved as its parts in each process (cr/memory.c)
 * with its key, size and mode, and made again with them: shmget with its
 * key (IPC_PRIVATE stays so), removed again at once if it was (SHM_DEST),
 * and its pages written by every process that had them. The host gives
 * it a new id; the program keeps the one it knew, which cr/pids.c
 * translates in shmget, shmat and shmctl as it does pids. A segment whose
 * key another segment holds at restore is taken over if no process has it
 * attached and it has the size (the checkpointed program's own, left by
 * its end), else the restore is refused. A segment also attached outside
 * the saved processes is refused by the checkpoint already
 * (zv_cr_sysv_outside), and by the restore of an image made without. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/memory.h"
#include "cr/treerestore.h"
#include "cr/resutil.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/mman.h>
#include <asm/ipcbuf.h>
#include <asm/shmbuf.h>

#define SHANON_BASE (ZV_KWIN_END - (1UL << 38)) /* up to the tree's area (cr/treerestore.c) */
#define IPC_CREAT_ 01000
#define IPC_EXCL_ 02000
#define IPC_RMID_ 0
#define IPC_STAT_ 2
#define SHM_DEST_ 01000

long zv_cr_sysv_describe(struct zv_cr_out *o, uint64_t id, struct zv_cr_vma *v)
{
	struct shmid64_ds ds;
	long e = zv_sys3(__NR_shmctl, (int)id, IPC_STAT_, &ds);
	if (e < 0)
		return zv_cr_refuse(o, "SysV shared memory (shmat) at %lx: its segment %d cannot be read: %s",
				    (unsigned long)v->start, (int)id, zv_strerror((int)-e));
	v->fsize = (uint64_t)zv_cr_guest_shmid((int)id);
	v->mtime_s = (int64_t)ds.shm_segsz;
	v->mtime_ns = (int64_t)((uint64_t)(uint32_t)ds.shm_perm.key << 32 | (ds.shm_perm.mode & 0xffff));
	v->nattch = (uint32_t)ds.shm_nattch;
	return 0;
}

/* Each attachment of a segment is one mapping of it (the host counts
 * mappings: a split one counts twice), so the mappings in the saved
 * processes' maps must be all its shm_nattch; the restore checks the same
 * (make_sysv), this says so before anything is written. */
struct attached { int id; unsigned n; };

long zv_cr_sysv_outside(const int *hpids, int n, char *why, size_t len)
{
	struct zv_cr_buf seen = { 0 };
	struct zv_cr_mapline m;
	long r = 0;
	for (int i = 0; i < n; i++) {
		char path[48];
		uint64_t maplen;
		zv_snprintf(path, sizeof path, "/proc/%d/maps", hpids[i]);
		char *maps = zv_cr_read_maps(path, &maplen);
		const char *p = maps;
		while (maps && zv_cr_maps_next(&p, &m) == 0) {
			if (!zv_startswith(m.path, "/SYSV"))
				continue;
			struct attached *a = (void *)seen.p, *hit = NULL;
			for (size_t k = 0; k < seen.len / sizeof *a; k++)
				if (a[k].id == (int)m.inode)
					hit = &a[k];
			if (hit)
				hit->n++;
			else
				zv_cr_buf_put(&seen, &(struct attached){ (int)m.inode, 1 }, sizeof(struct attached));
		}
		if (maps)
			zv_kunmap(maps, maplen);
	}
	struct attached *a = (void *)seen.p;
	for (size_t k = 0; k < seen.len / sizeof *a && r == 0; k++) {
		struct shmid64_ds ds; /* unreadable: the process's dump says so */
		if (zv_sys3(__NR_shmctl, a[k].id, IPC_STAT_, &ds) == 0 && ds.shm_nattch > a[k].n) {
			zv_snprintf(why, len, "SysV shared memory %d (key 0x%x) has %lu attachments, %u of them in the "
				    "saved processes: it is shared with others", a[k].id, (unsigned)ds.shm_perm.key,
				    (unsigned long)ds.shm_nattch, a[k].n);
			r = -1;
		}
	}
	zv_cr_buf_free(&seen);
	return r;
}

static int sysv_part(const struct zv_cr_vma *v, int sysv_only)
{
	return v->kind == ZV_CR_SYSV || (!sysv_only && (v->kind == ZV_CR_SHANON || v->kind == ZV_CR_SHDEL));
}

void zv_cr_shared_scan(struct zv_cr_buf *objs, const char *mm, uint64_t len, int sysv_only)
{
	for (const char *p = mm; p + sizeof(struct zv_cr_vma) <= mm + len; p = zv_cr_vma_next((const void *)p)) {
		const struct zv_cr_vma *v = (const void *)p;
		if (!sysv_part(v, sysv_only))
			continue;
		uint64_t end = v->off + (v->end - v->start);
		if (v->kind == ZV_CR_SYSV && (uint64_t)v->mtime_s > end)
			end = (uint64_t)v->mtime_s; /* the whole segment */
		struct zv_cr_shanon *s = (void *)objs->p, *o = NULL;
		for (size_t k = 0; k < objs->len / sizeof *s; k++)
			if (s[k].kind == v->kind && s[k].ino == v->fsize)
				o = &s[k];
		if (o) {
			o->len = end > o->len ? end : o->len;
			o->parts++;
		} else {
			struct zv_cr_shanon n = { v->kind, -1, v->fsize, 0, end, 0, 0, 1, v->nattch };
			if (v->kind == ZV_CR_SYSV) {
				n.size = (uint64_t)v->mtime_s;
				n.keymode = (uint64_t)v->mtime_ns;
			}
			zv_cr_buf_put(objs, &n, sizeof n);
		}
	}
}

/* Segment s made again and attached at its address: -1 with why. */
static long make_sysv(struct zv_cr_shanon *s, char *why, size_t n)
{
	int key = (int)(s->keymode >> 32), mode = (int)(s->keymode & 0777);
	if (s->parts < s->nattch) { /* each attachment is a mapping of a saved process */
		zv_snprintf(why, n, "SysV shared memory %d had %u attachments, %u of them in the saved processes: "
			    "it is shared with others", (int)s->ino, s->nattch, s->parts);
		return -1;
	}
	long id = zv_sys3(__NR_shmget, key, s->size, IPC_CREAT_ | IPC_EXCL_ | mode);
	int taken = 0;
	for (int tries = 0; id == -EEXIST;) { /* the original's, if it is left unused */
		struct shmid64_ds ds;
		const char *how = "";
		id = zv_sys3(__NR_shmget, key, 0, 0);
		if (id >= 0 && zv_sys3(__NR_shmctl, id, IPC_STAT_, &ds) == 0) {
			if (ds.shm_segsz == s->size && ds.shm_nattch == 0) {
				taken = 1;
				break;
			}
			if (ds.shm_segsz == s->size && zv_cr_retry(&tries)) {
				id = -EEXIST;
				continue;
			}
			how = ds.shm_segsz != s->size ? ", of another size" : ", attached";
		}
		zv_snprintf(why, n, "SysV shared memory key 0x%x: another segment has it%s (ipcrm -M 0x%x removes it)",
			    key, how, key);
		return -1;
	}
	if (id < 0) {
		zv_snprintf(why, n, "cannot make SysV shared memory of %lu bytes (key 0x%x): %s", (unsigned long)s->size,
			    key, zv_strerror((int)-id));
		return -1;
	}
	long p = zv_sys3(__NR_shmat, id, s->addr, 0);
	if (p != (long)s->addr) {
		zv_snprintf(why, n, "cannot attach SysV shared memory %ld: %s", id,
			    zv_strerror(zv_is_err(p) ? (int)-p : EEXIST));
		return -1;
	}
	if (taken) /* what it holds now is not the program's: the image's pages come */
		zv_sys3(__NR_madvise, s->addr, s->len, MADV_REMOVE);
	if (s->keymode & SHM_DEST_) /* gone once the restored processes detach it */
		zv_sys3(__NR_shmctl, id, IPC_RMID_, NULL);
	s->id = (int32_t)id;
	return 0;
}

long zv_cr_shared_make(struct zv_cr_buf *objs, struct zv_cr_treectx *t, char *why, size_t n)
{
	uint64_t at = SHANON_BASE;
	struct zv_cr_shanon *s = (void *)objs->p;
	if (objs->failed) {
		zv_snprintf(why, n, "out of memory");
		return -1;
	}
	for (size_t k = 0; k < objs->len / sizeof *s; k++) {
		s[k].len = (s[k].len + 4095) & ~4095UL;
		s[k].addr = at;
		if (s[k].kind == ZV_CR_SYSV) {
			if (make_sysv(&s[k], why, n) < 0)
				return -1;
		} else if ((uint64_t)zv_mmap((void *)at, s[k].len, PROT_READ | PROT_WRITE,
					     MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != at) {
			zv_snprintf(why, n, "cannot make the tree's shared memory");
			return -1;
		}
		at += s[k].len + 4096;
	}
	t->shanon = s;
	t->nshanon = (unsigned)(objs->len / sizeof *s);
	return 0;
}

void zv_cr_sysv_ids(const struct zv_cr_treectx *t)
{
	for (unsigned i = 0; i < t->nshanon; i++)
		if (t->shanon[i].kind == ZV_CR_SYSV && (int64_t)t->shanon[i].ino != t->shanon[i].id)
			zv_cr_ids_add((int)t->shanon[i].ino, t->shanon[i].id, ZV_CR_ID_SHM);
}

long zv_cr_sysv_alone(const char *mm, uint64_t len, struct zv_cr_treectx *t, char *why, size_t n)
{
	struct zv_cr_buf objs = { 0 };
	zv_cr_shared_scan(&objs, mm, len, 1);
	return objs.len || objs.failed ? zv_cr_shared_make(&objs, t, why, n) : 0;
}
